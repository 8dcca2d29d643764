#include <numeric>

#include "tests/support/vk_test.h"

using namespace vkf;

VKF_TEST_CASE("buffer round trips of odd sizes", "[engine][memory]") {
  Device& dev = test::device();
  for (size_t bytes : {1u, 3u, 4u, 255u, 257u, 4099u, 1000003u}) {
    std::vector<uint8_t> data(bytes);
    for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
    Buffer b = dev.allocate(bytes, "round trip");
    dev.upload(b, data);
    CHECK(dev.download<uint8_t>(b, bytes) == data);
  }
}

VKF_TEST_CASE("uploads larger than the staging ring go in chunks", "[engine][memory]") {
  auto dev = test::new_device({.staging_bytes = 4096});
  std::vector<uint32_t> data(10001);
  std::iota(data.begin(), data.end(), 0u);
  Buffer b = dev->allocate(data.size() * 4, "chunked");
  dev->upload(b, data);
  CHECK(dev->download<uint32_t>(b, data.size()) == data);
}

VKF_TEST_CASE("sub-allocation spans several blocks and reuses freed ranges", "[engine][memory]") {
  auto dev = test::new_device({.memory = {.block_bytes = 1 << 16}});
  Allocator& mem = dev->memory();
  auto before = mem.stats(MemoryKind::device).blocks;
  std::vector<Buffer> buffers;
  for (int i = 0; i < 10; ++i) buffers.push_back(dev->allocate(20000, "piece"));
  auto after = mem.stats(MemoryKind::device).blocks;
  CHECK(after - before >= 3);  // 3 pieces of 20000 fit a 64 KiB block
  // Ranges never overlap.
  for (size_t i = 0; i < buffers.size(); ++i)
    for (size_t j = i + 1; j < buffers.size(); ++j)
      CHECK_FALSE(buffers[i].ref().overlaps(buffers[j].ref()));
  // Each piece keeps its own contents.
  for (int i = 0; i < 10; ++i) dev->upload(buffers[i], std::vector<float>(5000, float(i)));
  for (int i = 0; i < 10; ++i) CHECK(dev->download<float>(buffers[i], 5000)[4999] == float(i));
  // Freed neighbours coalesce: a bigger request then fits without a new block.
  buffers.clear();
  Buffer big = dev->allocate(60000, "big");
  CHECK(mem.stats(MemoryKind::device).blocks == after);
  CHECK(mem.stats(MemoryKind::device).used_bytes >= 60000);
  // Larger than a block: gets a block of its own.
  Buffer huge = dev->allocate(200000, "huge");
  CHECK(huge.size() == 200000);
}

VKF_TEST_CASE("an allocation larger than the heap is a clear error", "[engine][memory]") {
  Device& dev = test::device();
  uint64_t heap = 0;
  for (const auto& h : dev.info().heaps) heap = std::max(heap, h.size_bytes);
  uint64_t too_big = heap * 2 + 4096;
  try {
    dev.allocate(too_big, "the moon");
    FAIL("allocation succeeded");
  } catch (const OutOfMemoryError& e) {
    std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("the moon"));
    CHECK_THAT(msg, Catch::Contains(dev.info().name));
  }
}

VKF_TEST_CASE("tensor views check their size", "[engine][tensor]") {
  Device& dev = test::device();
  Buffer b = dev.allocate(24, "t");
  Tensor t(b, {2, 3}, DType::f32);
  CHECK(t.numel() == 6);
  CHECK(t.bytes() == 24);
  CHECK(Tensor(b, {3, 4}, DType::f16).bytes() == 24);
  REQUIRE_THROWS_WITH(Tensor(b, {5, 5}), Catch::Contains("[5, 5]"));
}
