// The gradient exchange between logical devices: every buffer ends with the element-wise sum, for
// sizes that fill no bucket evenly, with several buckets and with one.
#include "engine/exchange/gradient_exchange.h"
#include "tests/support/vk_test.h"

using namespace vkf;

VKF_TEST_CASE("gradient exchange sums buffers of odd sizes across logical devices",
              "[engine][exchange]") {
  for (const uint64_t n : {uint64_t(1), uint64_t(4099), uint64_t(100003)}) {
    for (const uint64_t bucket : {uint64_t(1) << 22, uint64_t(4093)}) {
      for (const size_t replicas : {size_t(1), size_t(2), size_t(3)}) {
        INFO("n " << n << ", bucket " << bucket << ", replicas " << replicas);
        std::vector<std::unique_ptr<Device>> owned;
        std::vector<Device*> devices;
        std::vector<Buffer> buffers;
        std::vector<BufferRef> refs;
        std::vector<double> want(n, 0.0);
        for (size_t r = 0; r < replicas; ++r) {
          owned.push_back(test::new_device());
          devices.push_back(owned.back().get());
          // Small integers: every sum order gives the same exact result.
          std::vector<float> v(n);
          for (uint64_t i = 0; i < n; ++i) {
            v[i] = float(int((i * 7919 + r * 104729) % 2001) - 1000);
            want[i] += v[i];
          }
          // One float of slack each side: the exchange must touch only its range.
          buffers.push_back(devices[r]->allocate((n + 2) * 4, "grads"));
          std::vector<float> padded(n + 2, test::k_poison);
          std::copy(v.begin(), v.end(), padded.begin() + 1);
          devices[r]->upload(buffers[r], padded);
          refs.push_back(buffers[r].ref().slice(4, n * 4));
        }
        GradientExchange exchange(devices, refs, n, nullptr, bucket);
        CHECK(exchange.buckets() == (n + bucket - 1) / bucket);
        exchange.all_reduce();
        exchange.all_reduce();  // replayable: a second call sums the sums
        for (size_t r = 0; r < replicas; ++r) {
          auto got = devices[r]->download<float>(buffers[r], n + 2);
          CHECK(got.front() == test::k_poison);
          CHECK(got.back() == test::k_poison);
          uint64_t wrong = 0;
          for (uint64_t i = 0; i < n; ++i)
            wrong += got[i + 1] != float(want[i] * double(replicas == 1 ? 1 : replicas));
          CHECK(wrong == 0);
        }
        CHECK(exchange.stats().bytes == (replicas == 1 ? 0 : 2 * n * 4 * replicas));
      }
    }
  }
}
