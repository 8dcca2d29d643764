// The gradient exchange between logical devices: every buffer ends with the element-wise sum, for
// sizes that fill no bucket evenly, with several buckets and with one.
#include <cmath>

#include "engine/exchange/gradient_exchange.h"
#include "tests/support/bare_device.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

// Every staging path this machine's device offers (lavapipe has both).
std::vector<ExchangePath> paths() {
  std::vector<ExchangePath> out{ExchangePath::staged};
  if (test::device().info().external_memory_host) out.push_back(ExchangePath::shared);
  return out;
}

// `n` logical devices on the test device's physical device.
std::vector<Device*> logical_devices(size_t n, std::vector<std::unique_ptr<Device>>& owned) {
  std::vector<Device*> out;
  for (size_t i = 0; i < n; ++i) {
    owned.push_back(test::new_device());
    out.push_back(owned.back().get());
  }
  return out;
}

const char* name(ExchangePath p) {
  return p == ExchangePath::shared ? "shared host memory" : "staged";
}

}  // namespace

VKF_TEST_CASE("gradient exchange sums buffers of odd sizes across logical devices",
              "[engine][exchange]") {
  for (const ExchangePath path : paths())
    for (const uint64_t n : {uint64_t(1), uint64_t(4099), uint64_t(100003)}) {
      for (const uint64_t bucket : {uint64_t(1) << 22, uint64_t(4093)}) {
        for (const size_t replicas : {size_t(1), size_t(2), size_t(3)}) {
          INFO(name(path) << ": n " << n << ", bucket " << bucket << ", replicas " << replicas);
          std::vector<std::unique_ptr<Device>> owned;
          const std::vector<Device*> devices = logical_devices(replicas, owned);
          std::vector<Buffer> buffers;
          std::vector<BufferRef> refs;
          std::vector<double> want(n, 0.0);
          for (size_t r = 0; r < replicas; ++r) {
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
          GradientExchange exchange(devices, refs, n, nullptr, bucket, {}, path);
          CHECK(exchange.path() == path);
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

VKF_TEST_CASE("the overlapped exchange: layer boundaries, any download order, identical replicas",
              "[engine][exchange]") {
  for (const ExchangePath path : paths()) {
    INFO(name(path));
    const uint64_t n = 150001;  // large enough for the threaded reduce-scatter
    const size_t replicas = 3;
    std::vector<std::unique_ptr<Device>> owned;
    const std::vector<Device*> devices = logical_devices(replicas, owned);
    std::vector<Buffer> buffers;
    std::vector<BufferRef> refs;
    std::vector<double> want(n, 0.0);
    for (size_t r = 0; r < replicas; ++r) {
      std::vector<float> v = test::random_floats(n, 100 + r);
      for (uint64_t i = 0; i < n; ++i) want[i] += v[i];
      buffers.push_back(devices[r]->allocate(n * 4, "grads"));
      devices[r]->upload(buffers[r], v);
      refs.push_back(buffers[r].ref());
    }
    // Buckets of at most 40000 floats that also end at 1000 and 70000 (say, where layers end).
    GradientExchange exchange(devices, refs, n, nullptr, 40000, {70000, 1000}, path);
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (size_t b = 0; b < exchange.buckets(); ++b) ranges.push_back(exchange.bucket_range(b));
    CHECK(ranges == std::vector<std::pair<uint64_t, uint64_t>>{{0, 1000},
                                                               {1000, 41000},
                                                               {41000, 70000},
                                                               {70000, 110000},
                                                               {110000, 150000},
                                                               {150000, 150001}});
    // A bucket cannot be reduced before every device has queued its download.
    exchange.download(0, 0);
    CHECK_THROWS_WITH(exchange.reduce(0), Catch::Contains("1 of 3 downloads"));
    // Downloads device by device, buckets last to first (as a backward finishes layers).
    for (size_t r = 0; r < replicas; ++r)
      for (size_t b = exchange.buckets(); b-- > 0;)
        if (!(r == 0 && b == 0)) exchange.download(r, b);
    for (size_t b = exchange.buckets(); b-- > 0;) exchange.reduce(b);
    exchange.finish();
    const auto first = devices[0]->download<float>(buffers[0], n);
    double worst = 0;
    for (uint64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(double(first[i]) - want[i]));
    CHECK(worst <= 1e-5);  // |values| <= 1: three of them summed in fp32
    for (size_t r = 1; r < replicas; ++r) {
      const auto got = devices[r]->download<float>(buffers[r], n);
      uint64_t differ = 0;
      for (uint64_t i = 0; i < n; ++i) differ += got[i] != first[i];
      CHECK(differ == 0);  // the all-gather hands every replica the same bits
    }
  }
}

VKF_TEST_CASE("shared host memory is refused where a device cannot import it",
              "[engine][exchange]") {
  // An adopted device enables no extension of ours, so it cannot import host memory.
  Device& base = test::device();
  test::BareDevice bare;
  std::vector<Device*> devices{&base, &bare.get()};
  CHECK_FALSE(SharedHostMemory::supported(devices));
  Buffer a = base.allocate(64, "a"), b = bare.get().allocate(64, "b");
  CHECK_THROWS_WITH(
      GradientExchange(devices, {a.ref(), b.ref()}, 16, nullptr, 1 << 22, {}, ExchangePath::shared),
      Catch::Contains("VK_EXT_external_memory_host"));
  GradientExchange fallback(devices, {a.ref(), b.ref()}, 16);
  CHECK(fallback.path() == ExchangePath::staged);
}
