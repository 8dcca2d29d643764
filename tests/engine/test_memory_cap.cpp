// A cap on the Vulkan memory the engine takes (DeviceOptions::memory.limit_bytes): blocks are cut
// to fit under it, and what cannot fit is refused with OutOfMemoryError, leaving the device
// usable.
#include "engine/ops/basic.h"
#include "tests/support/vk_test.h"

using namespace vkf;

VKF_TEST_CASE("the memory cap refuses cleanly and the device goes on working", "[engine][memory]") {
  constexpr uint64_t MiB = 1 << 20;
  auto dev = test::new_device({.memory = {.limit_bytes = 40 * MiB}, .staging_bytes = 4 * MiB});
  CHECK(dev->memory().limit_bytes() == 40 * MiB);
  Buffer a = dev->allocate(10 * MiB, "a");
  // Blocks are 256 MiB unless capped: this one was cut to what the cap left.
  CHECK(dev->memory().reserved_bytes() <= 40 * MiB);
  CHECK_THROWS_AS(dev->allocate(40 * MiB, "too much"), OutOfMemoryError);
  CHECK_THROWS_WITH(dev->allocate(40 * MiB, "too much"), Catch::Contains("memory cap") &&
                                                             Catch::Contains("too much") &&
                                                             Catch::Contains(dev->label()));
  // What fits the room left still comes, and works.
  Buffer b = dev->allocate(8 * MiB, "b");
  Recorder rec(*dev);
  ops::fill(*dev, rec, b, 1000, 2.5f);
  rec.finish().run();
  CHECK(dev->download<float>(b, 1000)[999] == 2.5f);
  CHECK(dev->memory().reserved_bytes() <= 40 * MiB);
  // Freed ranges are reused under the cap.
  a.reset();
  Buffer c = dev->allocate(10 * MiB, "c");
  CHECK(dev->memory().reserved_bytes() <= 40 * MiB);
}

VKF_TEST_CASE("a cap too small for the staging ring refuses the device", "[engine][memory]") {
  CHECK_THROWS_AS(test::new_device({.memory = {.limit_bytes = 1 << 20}}), OutOfMemoryError);
  CHECK_THROWS_WITH(test::new_device({.memory = {.limit_bytes = 1 << 20}}),
                    Catch::Contains("staging ring"));
  // And the next device is fine.
  auto dev = test::new_device();
  CHECK(dev->memory().limit_bytes() == 0);
}
