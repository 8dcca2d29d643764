// gather_rows and scatter_rows (shaders/indexed_rows.comp) against plain loops: odd sizes,
// indices and limits read from host-visible buffers and changed between replays of one recorded
// sequence, out-of-range indices skipped, untouched words still poisoned. Exact.
#include <cstring>
#include <vector>

#include "engine/ops/indexed_rows.h"
#include "tests/support/vk_test.h"

using namespace vkf;

namespace {

void put(const Buffer& b, const std::vector<int32_t>& v) {
  std::memcpy(b.mapped(), v.data(), v.size() * 4);
}

}  // namespace

VKF_TEST_CASE("gather_rows: index and limit from buffers, replayed", "[shaders][indexed_rows]") {
  Device& dev = test::device();
  struct Case {
    uint32_t rows, cols, src_rows, ss, ds, unit;
    bool use_index, use_limit;
  };
  for (Case c :
       {Case{5, 37, 7, 41, 39, 1, true, false}, Case{3, 1, 3, 0, 0, 1, false, false},
        Case{6, 1300, 9, 1301, 1303, 13, true, true}, Case{70, 3, 70, 5, 0, 1, false, true}}) {
    INFO(c.rows << "x" << c.cols << " index " << c.use_index << " limit " << c.use_limit);
    const uint32_t ss = c.ss ? c.ss : c.cols, ds = c.ds ? c.ds : c.cols;
    const uint32_t src_n = c.src_rows * ss, dst_n = c.rows * ds;
    auto src = test::random_floats(src_n, c.cols);
    Buffer bs = dev.allocate(src_n * 4, "src"), bd = dev.allocate(dst_n * 4, "dst");
    Buffer bi = dev.allocate(c.rows * 4, "index", MemoryKind::host);
    Buffer bl = dev.allocate(4, "limit", MemoryKind::host);
    dev.upload(bs, src);
    Recorder rec(dev);
    ops::gather_rows(dev, rec,
                     {.src = bs,
                      .dst = bd,
                      .index = c.use_index ? bi.ref() : BufferRef{},
                      .limit = c.use_limit ? bl.ref() : BufferRef{},
                      .rows = c.rows,
                      .cols = c.cols,
                      .src_rows = c.src_rows,
                      .src_stride = c.ss,
                      .dst_stride = c.ds,
                      .limit_unit = c.unit});
    Sequence seq = rec.finish();
    for (int replay = 0; replay < 3; ++replay) {
      std::vector<int32_t> index(c.rows);
      for (uint32_t r = 0; r < c.rows; ++r)
        index[r] = int32_t((r * 7 + 3 * replay + 1) % (c.src_rows + 1)) - (r == 1 ? 5 : 0);
      const int32_t limit = replay == 0 ? 0 : replay == 1 ? 2 : 1000000;
      put(bi, index);
      put(bl, {limit});
      dev.upload(bd, std::vector<float>(dst_n, test::k_poison));
      seq.run();
      std::vector<float> want(dst_n, test::k_poison);
      uint32_t n = c.cols;
      if (c.use_limit) n = std::min<uint64_t>(c.cols, uint64_t(limit) * c.unit);
      for (uint32_t r = 0; r < c.rows; ++r) {
        int32_t s = c.use_index ? index[r] : int32_t(r);
        if (s < 0 || uint32_t(s) >= c.src_rows) continue;
        for (uint32_t j = 0; j < n; ++j) want[r * ds + j] = src[uint32_t(s) * ss + j];
      }
      CHECK(dev.download<float>(bd, dst_n) == want);
    }
  }
  Buffer small = dev.allocate(16, "small"), other = dev.allocate(64, "other");
  Recorder rec(dev);
  REQUIRE_THROWS_WITH(
      ops::gather_rows(dev, rec, {.src = small, .dst = other, .rows = 2, .cols = 3}),
      Catch::Contains("gather_rows src"));
}

VKF_TEST_CASE("scatter_rows: per-row positions from a buffer, replayed",
              "[shaders][indexed_rows]") {
  Device& dev = test::device();
  struct Case {
    uint32_t rows, cols, positions, ps, ss, ds;
  };
  for (Case c : {Case{1, 1, 1, 0, 0, 0}, Case{7, 33, 5, 0, 0, 0}, Case{3, 1027, 4, 1031, 1029, 0},
                 Case{5, 9, 6, 11, 13, 70}}) {
    INFO(c.rows << "x" << c.cols << " into " << c.positions);
    const uint32_t ps = c.ps ? c.ps : c.cols, ss = c.ss ? c.ss : c.cols;
    const uint32_t ds = c.ds ? c.ds : c.positions * ps;
    const uint32_t src_n = c.rows * ss, dst_n = (c.rows - 1) * ds + (c.positions - 1) * ps + c.cols;
    auto src = test::random_floats(src_n, c.cols + 1);
    Buffer bs = dev.allocate(src_n * 4, "src"), bd = dev.allocate(dst_n * 4, "dst");
    Buffer bp = dev.allocate(c.rows * 4, "position", MemoryKind::host);
    dev.upload(bs, src);
    Recorder rec(dev);
    ops::scatter_rows(dev, rec,
                      {.src = bs,
                       .dst = bd,
                       .position = bp,
                       .rows = c.rows,
                       .cols = c.cols,
                       .positions = c.positions,
                       .position_stride = c.ps,
                       .src_stride = c.ss,
                       .dst_stride = c.ds});
    Sequence seq = rec.finish();
    std::vector<float> want(dst_n, test::k_poison);
    dev.upload(bd, want);
    for (uint32_t t = 0; t < c.positions + 1; ++t) {  // the last one is out of range: skipped
      std::vector<int32_t> pos(c.rows);
      for (uint32_t r = 0; r < c.rows; ++r) pos[r] = r == 2 ? -1 : int32_t(t);
      put(bp, pos);
      seq.run();
      for (uint32_t r = 0; r < c.rows; ++r) {
        if (pos[r] < 0 || uint32_t(pos[r]) >= c.positions) continue;
        for (uint32_t j = 0; j < c.cols; ++j)
          want[r * ds + uint32_t(pos[r]) * ps + j] = src[r * ss + j];
      }
      CHECK(dev.download<float>(bd, dst_n) == want);
    }
  }
}
