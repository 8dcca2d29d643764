// Asynchronous work in a host's frame loop: a sequence submitted without waiting, polled while
// the host works; semaphores that order the engine's submissions against the host's own (a
// timeline the engine owns, a binary semaphore the host passes in); GPU time per sequence.
#include <chrono>
#include <functional>

#include "engine/ops/basic.h"
#include "engine/timeline.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

// A command pool, command buffer and fence the host owns on the engine's device and queue
// family, as a game's renderer would.
struct HostCommands {
  explicit HostCommands(Device& dev) : dev_(dev) {
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;  // re-recorded each frame
    pi.queueFamilyIndex = dev.info().compute_queue_family;
    REQUIRE(vkCreateCommandPool(dev.handle(), &pi, nullptr, &pool) == VK_SUCCESS);
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    REQUIRE(vkAllocateCommandBuffers(dev.handle(), &ai, &cmd) == VK_SUCCESS);
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    REQUIRE(vkCreateFence(dev.handle(), &fi, nullptr, &fence) == VK_SUCCESS);
  }
  ~HostCommands() {
    vkDestroyFence(dev_.handle(), fence, nullptr);
    vkDestroyCommandPool(dev_.handle(), pool, nullptr);
  }
  // Records a copy of `src` into `dst` and submits it waiting for `wait` at `value` (0: a binary
  // semaphore).
  void copy_after(const BufferRef& src, const BufferRef& dst, VkSemaphore wait, uint64_t value) {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    REQUIRE(vkBeginCommandBuffer(cmd, &bi) == VK_SUCCESS);
    VkBufferCopy c{src.offset, dst.offset, src.size};
    vkCmdCopyBuffer(cmd, src.buffer, dst.buffer, 1, &c);
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                         nullptr, 0, nullptr);
    REQUIRE(vkEndCommandBuffer(cmd) == VK_SUCCESS);
    VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkTimelineSemaphoreSubmitInfo ti{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    ti.waitSemaphoreValueCount = 1;
    ti.pWaitSemaphoreValues = &value;
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    if (value != 0) si.pNext = &ti;
    si.waitSemaphoreCount = 1;
    si.pWaitSemaphores = &wait;
    si.pWaitDstStageMask = &stage;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    REQUIRE(vkQueueSubmit(dev_.queue(), 1, &si, fence) == VK_SUCCESS);
  }
  void wait() {
    REQUIRE(vkWaitForFences(dev_.handle(), 1, &fence, VK_TRUE, UINT64_MAX) == VK_SUCCESS);
    REQUIRE(vkResetFences(dev_.handle(), 1, &fence) == VK_SUCCESS);
  }

  Device& dev_;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
};

}  // namespace

VKF_TEST_CASE("submit returns at once; the host polls while it works, then the results are in",
              "[engine][async]") {
  Device& dev = test::device();
  REQUIRE(dev.timeline_semaphores());
  const uint32_t n = 100003;
  Buffer y = dev.allocate(n * 4, "y");
  // The sequence cannot start before the host says so: a submit that blocked until the work was
  // done would never return.
  Timeline gate(dev);
  auto open_gate = [&] {
    VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
    signal.semaphore = gate.handle();
    signal.value = 1;
    if (gate.completed() < 1) REQUIRE(vkSignalSemaphore(dev.handle(), &signal) == VK_SUCCESS);
  };
  // Opens the gate however the test ends, so that the sequence can finish before it is freed.
  struct Guard {
    std::function<void()> f;
    ~Guard() { f(); }
  } guard{open_gate};
  Recorder rec(dev);
  ops::fill(dev, rec, y, n, 7.0f);
  Sequence seq = rec.finish();
  seq.submit({.wait = {gate.at(1)}});
  CHECK_FALSE(seq.ready());
  uint64_t host_work = 0;  // the host's own frame work, overlapping the engine's submission
  for (int frame = 0; frame < 3; ++frame) {
    for (int i = 0; i < 100000; ++i) host_work += uint64_t(i) * uint64_t(frame);
    CHECK_FALSE(seq.ready());
  }
  CHECK(host_work > 0);
  open_gate();
  const auto start = std::chrono::steady_clock::now();
  while (!seq.ready()) REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(60));
  seq.wait();
  CHECK(dev.download<float>(y, n)[n - 1] == 7.0f);
}

VKF_TEST_CASE("a timeline value the engine signals orders the host's own submission",
              "[engine][async]") {
  Device& dev = test::device();
  const uint32_t n = 4097;
  Buffer y = dev.allocate(n * 4, "y"), copy = dev.allocate(n * 4, "host copy");
  dev.upload(copy, std::vector<float>(n, test::k_poison));
  Timeline timeline(dev);
  HostCommands host(dev);
  for (uint64_t value = 1; value <= 3; ++value) {
    Recorder rec(dev);
    ops::fill(dev, rec, y, n, float(value));
    Sequence seq = rec.finish();
    seq.submit({.signal = {timeline.at(value)}});
    // The host's copy reads what the engine wrote: ordered by the semaphore alone, on the device.
    host.copy_after(y, copy, timeline.handle(), value);
    host.wait();
    CHECK(timeline.completed() >= value);
    timeline.wait(value);
    CHECK(dev.download<float>(copy, n)[n - 1] == float(value));
    seq.wait();
  }
}

VKF_TEST_CASE("a binary semaphore the host passes in is signalled for the host's queue",
              "[engine][async]") {
  Device& dev = test::device();
  const uint32_t n = 513;
  Buffer y = dev.allocate(n * 4, "y"), copy = dev.allocate(n * 4, "host copy");
  VkSemaphoreCreateInfo ci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  VkSemaphore binary = VK_NULL_HANDLE;
  REQUIRE(vkCreateSemaphore(dev.handle(), &ci, nullptr, &binary) == VK_SUCCESS);
  {
    HostCommands host(dev);
    Recorder rec(dev);
    ops::fill(dev, rec, y, n, -3.5f);
    Sequence seq = rec.finish();
    seq.submit({.signal = {{binary}}});
    host.copy_after(y, copy, binary, 0);
    host.wait();
    seq.wait();
    CHECK(dev.download<float>(copy, n)[0] == -3.5f);
  }
  vkDestroySemaphore(dev.handle(), binary, nullptr);
}

VKF_TEST_CASE("a timed sequence reports its GPU time", "[engine][async]") {
  Device& dev = test::device();
  if (dev.info().timestamp_valid_bits == 0) VKF_SKIP("the queue has no timestamps");
  const uint32_t n = 1 << 20;
  Buffer y = dev.allocate(n * 4, "y");
  Recorder rec(dev, {.timed = true});
  for (int i = 0; i < 4; ++i) ops::fill(dev, rec, y, n, float(i));
  Sequence seq = rec.finish();
  const auto start = std::chrono::steady_clock::now();
  seq.run();
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const double gpu_ms = seq.gpu_milliseconds();
  CHECK(gpu_ms > 0.0);
  CHECK(gpu_ms <= wall_ms * 1.05 + 0.05);  // within the time the host saw it take
  CHECK(seq.timings().empty());            // no per-dispatch timestamps unless profiling
  Recorder untimed(dev);
  ops::fill(dev, untimed, y, n, 1.0f);
  Sequence plain = untimed.finish();
  plain.run();
  CHECK(plain.gpu_milliseconds() == 0.0);
}
