#include "engine/ops/indexed_rows.h"

#include <algorithm>
#include <string>

#include "engine/error.h"
#include "engine/launch.h"

namespace vkf::ops {
namespace {

constexpr uint32_t k_local = 256;
constexpr uint32_t k_cols_per_thread = 4;  // column blocks: each invocation copies ~4 words

struct Push {
  uint32_t rows, cols, src_stride, dst_stride, dst_index_stride, limit_unit, flags, src_rows,
      dst_index_count;
};

void need_words(const BufferRef& b, uint64_t words, const std::string& what) {
  if (!b.valid()) throw Error(what + " is missing");
  if (b.size < words * 4)
    throw Error(what + ": needs " + std::to_string(words) + " 32-bit words (" +
                std::to_string(words * 4) + " bytes) but its buffer has " + std::to_string(b.size));
}

void dispatch(Device& dev, Recorder& rec, const Push& push, const BufferRef& src,
              const BufferRef& dst, const BufferRef& src_index, const BufferRef& dst_index,
              const BufferRef& limit) {
  const Kernel& k = dev.kernel({"indexed_rows", 5, sizeof push, {k_local}});
  const uint32_t col_groups =
      std::min<uint32_t>(ceil_div(push.cols, uint64_t{k_local} * k_cols_per_thread), 65535);
  const std::array<uint32_t, 3> groups{col_groups, std::min<uint32_t>(push.rows, 65535),
                                       ceil_div(push.rows, 65535)};
  // Unbound index and limit bindings get src again (never read).
  rec.dispatch(k,
               {in(src), out(dst), in(src_index.valid() ? src_index : src),
                in(dst_index.valid() ? dst_index : src), in(limit.valid() ? limit : src)},
               push, groups);
}

}  // namespace

void gather_rows(Device& dev, Recorder& rec, const GatherRowsArgs& a) {
  const std::string op = "gather_rows";
  if (a.rows == 0 || a.cols == 0)
    throw Error(op + ": empty [" + std::to_string(a.rows) + ", " + std::to_string(a.cols) + "]");
  const uint32_t src_rows = a.src_rows ? a.src_rows : a.rows;
  const uint32_t ss = a.src_stride ? a.src_stride : a.cols,
                 ds = a.dst_stride ? a.dst_stride : a.cols;
  if (ss < a.cols || ds < a.cols) throw Error(op + ": a stride is smaller than cols");
  if (a.limit_unit == 0) throw Error(op + ": limit_unit must be positive");
  const uint64_t src_words = uint64_t{src_rows - 1} * ss + a.cols,
                 dst_words = uint64_t{a.rows - 1} * ds + a.cols;
  if (src_words > 0xFFFFFFFFull || dst_words > 0xFFFFFFFFull)
    throw Error(op + ": more words than 32-bit indexing allows");
  need_words(a.src, src_words, op + " src");
  need_words(a.dst, dst_words, op + " dst");
  if (a.index.valid()) need_words(a.index, a.rows, op + " index");
  if (a.limit.valid()) need_words(a.limit, 1, op + " limit");
  if (a.src.overlaps(a.dst)) throw Error(op + ": src and dst overlap");
  if (!a.index.valid() && src_rows < a.rows)
    throw Error(op + ": without an index src needs at least rows rows");
  const Push push{a.rows,
                  a.cols,
                  ss,
                  ds,
                  0,
                  a.limit_unit,
                  (a.index.valid() ? 1u : 0u) | (a.limit.valid() ? 4u : 0u),
                  src_rows,
                  0};
  dispatch(dev, rec, push, a.src, a.dst, a.index, BufferRef{}, a.limit);
}

void scatter_rows(Device& dev, Recorder& rec, const ScatterRowsArgs& a) {
  const std::string op = "scatter_rows";
  if (a.rows == 0 || a.cols == 0 || a.positions == 0)
    throw Error(op + ": empty [" + std::to_string(a.rows) + ", " + std::to_string(a.cols) +
                "] into " + std::to_string(a.positions) + " positions");
  const uint32_t ps = a.position_stride ? a.position_stride : a.cols;
  const uint32_t ss = a.src_stride ? a.src_stride : a.cols;
  if (ps < a.cols || ss < a.cols) throw Error(op + ": a stride is smaller than cols");
  const uint64_t row_words = uint64_t{a.positions - 1} * ps + a.cols;
  const uint64_t ds = a.dst_stride ? a.dst_stride : uint64_t{a.positions} * ps;
  if (ds < row_words) throw Error(op + ": dst_stride is smaller than a row of positions");
  const uint64_t src_words = uint64_t{a.rows - 1} * ss + a.cols,
                 dst_words = uint64_t{a.rows - 1} * ds + row_words;
  if (src_words > 0xFFFFFFFFull || dst_words > 0xFFFFFFFFull)
    throw Error(op + ": more words than 32-bit indexing allows");
  need_words(a.src, src_words, op + " src");
  need_words(a.dst, dst_words, op + " dst");
  need_words(a.position, a.rows, op + " position");
  if (a.src.overlaps(a.dst)) throw Error(op + ": src and dst overlap");
  const Push push{a.rows, a.cols, ss, uint32_t(ds), ps, 1, 2u, a.rows, a.positions};
  dispatch(dev, rec, push, a.src, a.dst, BufferRef{}, a.position, BufferRef{});
}

}  // namespace vkf::ops
