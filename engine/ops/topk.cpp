#include "engine/ops/topk.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/launch.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/loss.h"
#include "engine/ops/topk_choice.h"
#include "engine/tuning.h"

namespace vkf::ops {

namespace {

// One pass per level: entries per row at each level's input, until one chunk remains.
std::vector<uint32_t> level_sizes(uint32_t n, uint32_t k, uint32_t chunk) {
  std::vector<uint32_t> sizes{n};
  while (sizes.back() > chunk) sizes.push_back(ceil_div(sizes.back(), chunk) * k);
  return sizes;
}

// Scratch sub-ranges start at multiples of 256 bytes, above any minStorageBufferOffsetAlignment.
uint64_t padded(uint64_t bytes) {
  return (bytes + 255) / 256 * 256;
}

// Where each piece of the scratch buffer lives (bytes from its start).
struct ScratchLayout {
  std::vector<uint32_t> sizes;  // level_sizes
  uint64_t region_a = 0;        // ping-pong candidates: values then indices, each region_* bytes
  uint64_t region_b = 0;
  bool prune = false;
  uint32_t maxima = 0;  // entries per row of the thread maxima (prune only)
  uint64_t maxima_at = 0, maxima_bytes = 0;
  uint64_t thr_at = 0, thr_bytes = 0;  // threshold top-k: values then indices
  uint64_t inner_at = 0;               // scratch of the threshold top-k
  uint64_t lse_at = 0;                 // [rows] f32 log-sum-exp (TopKArgs::log_softmax)
  uint64_t total = 0;
};

ScratchLayout candidates_layout(uint32_t rows, uint32_t n, uint32_t k, const TopKConfig& c) {
  ScratchLayout l;
  uint32_t chunk = c.workgroup_size * c.per_thread;
  l.sizes = level_sizes(n, k, chunk);
  if (l.sizes.size() < 2) return l;
  l.region_a = padded(uint64_t{rows} * l.sizes[1] * 4);
  l.region_b = l.sizes.size() > 2 ? padded(uint64_t{rows} * l.sizes[2] * 4) : 0;
  l.total = 2 * (l.region_a + l.region_b);
  l.maxima = ceil_div(n, chunk) * c.workgroup_size;
  l.prune = c.prune && l.maxima >= k;
  if (!l.prune) return l;
  l.maxima_at = l.total;
  l.maxima_bytes = padded(uint64_t{rows} * l.maxima * 4);
  l.thr_at = l.maxima_at + l.maxima_bytes;
  l.thr_bytes = padded(uint64_t{rows} * k * 4);
  l.inner_at = l.thr_at + 2 * l.thr_bytes;
  TopKConfig inner = c;
  inner.prune = false;
  l.total = l.inner_at + candidates_layout(rows, l.maxima, k, inner).total;
  return l;
}

ScratchLayout layout(uint32_t rows, uint32_t n, uint32_t k, const TopKConfig& c, bool log_softmax) {
  if (c.path == TopKPath::subgroup_rows) return {};  // one pass, straight into the outputs
  ScratchLayout l = candidates_layout(rows, n, k, c);
  if (log_softmax) {
    l.lse_at = l.total;
    l.total += padded(uint64_t{rows} * 4);
  }
  return l;
}

std::array<uint32_t, 3> grid(uint32_t chunks, uint32_t rows) {
  return {chunks, std::min<uint32_t>(rows, 65535), ceil_div(rows, 65535)};
}

void run(Device& dev, Recorder& rec, const TopKArgs& a, const std::string& op) {
  const TopKConfig& c = a.config;
  uint32_t wg = c.workgroup_size, chunk = wg * c.per_thread;
  ScratchLayout l = layout(a.rows, a.n, a.k, c, a.log_softmax);
  if (l.total && a.scratch.size < l.total)
    throw Error(op + ": scratch needs " + std::to_string(l.total) + " bytes, has " +
                std::to_string(a.scratch.size));
  auto region = [&](size_t which, bool idx) {
    uint64_t base = which == 0 ? 0 : 2 * l.region_a;
    uint64_t len = which == 0 ? l.region_a : l.region_b;
    return a.scratch.slice(base + (idx ? len : 0), len);
  };

  BufferRef lse = a.values;  // never read unless log_softmax
  if (a.log_softmax) {
    lse = a.scratch.slice(l.lse_at, uint64_t{a.rows} * 4);
    log_sum_exp(dev, rec,
                {.dtype = a.dtype, .x = a.values, .lse = lse, .rows = a.rows, .cols = a.n});
  }

  // Pruning threshold: the k-th largest of the per-invocation maxima of the first pass.
  BufferRef thr_val = a.values;  // never read without pruning
  if (l.prune) {
    uint32_t chunks = ceil_div(a.n, chunk);
    BufferRef maxima = a.scratch.slice(l.maxima_at, l.maxima_bytes);
    struct {
      uint32_t rows, n, chunks;
    } push{a.rows, a.n, chunks};
    const Kernel& km = dev.kernel(
        {kernel_for_dtype("topk_thread_max", a.dtype), 2, sizeof push, {wg, c.per_thread}});
    rec.dispatch(km, {in(a.values), out(maxima)}, push, grid(chunks, a.rows));
    TopKArgs t = a;
    t.dtype = DType::f32;  // the maxima are fp32
    t.values = maxima;
    t.n = l.maxima;
    t.out_values = a.scratch.slice(l.thr_at, l.thr_bytes);
    t.out_indices = a.scratch.slice(l.thr_at + l.thr_bytes, l.thr_bytes);
    t.scratch = a.scratch.slice(l.inner_at, a.scratch.size - l.inner_at);
    t.config.prune = false;
    t.log_softmax = false;
    run(dev, rec, t, op + " threshold");
    thr_val = t.out_values;
  }

  // Only the first pass reads the input values; later passes merge fp32 candidates.
  const Kernel& first =
      dev.kernel({kernel_for_dtype("topk", a.dtype), 6, 7 * 4, {wg, c.per_thread}});
  const Kernel& merge = dev.kernel({"topk", 6, 7 * 4, {wg, c.per_thread}});
  BufferRef in_val = a.values, in_idx = a.values;  // the first pass reads no indices
  for (size_t level = 0; level < l.sizes.size(); ++level) {
    uint32_t n = l.sizes[level];
    uint32_t chunks = ceil_div(n, chunk);
    if (chunks > 65535) throw Error(op + ": rows longer than 65535 chunks");
    bool last = level + 1 == l.sizes.size();
    BufferRef ov = last ? a.out_values : region(level % 2, false);
    BufferRef oi = last ? a.out_indices : region(level % 2, true);
    uint32_t use_threshold = l.prune && level == 0 ? 1u : 0u;
    uint32_t subtract_lse = last && a.log_softmax ? 1u : 0u;
    struct {
      uint32_t rows, n, k, chunks, has_idx, use_threshold, subtract_lse;
    } push{a.rows, n, a.k, chunks, level > 0 ? 1u : 0u, use_threshold, subtract_lse};
    rec.dispatch(level == 0 ? first : merge,
                 {in(in_val), in(in_idx), out(ov), out(oi), in(thr_val), in(lse)}, push,
                 grid(chunks, a.rows));
    in_val = ov;
    in_idx = oi;
  }
}

// The smallest list of 4, 8, 16, 32 entries that holds k (a specialization constant: each is a
// pipeline of its own, with its loops over the list unrolled).
uint32_t list_capacity(uint32_t k) {
  uint32_t c = 4;
  while (c < k) c *= 2;
  return c;
}

void run_rows(Device& dev, Recorder& rec, const TopKArgs& a) {
  const uint32_t wg = a.config.workgroup_size;
  // Normally one row per subgroup; any subgroup size the pipeline gets is still correct.
  const uint32_t per_group = std::max(1u, wg / std::max(1u, dev.info().subgroup_size));
  struct {
    uint32_t rows, n, k, rows_per_group;
  } push{a.rows, a.n, a.k, per_group};
  const Kernel& kernel =
      dev.kernel({kernel_for_dtype(a.log_softmax ? "topk_rows_lsm" : "topk_rows", a.dtype),
                  3,
                  sizeof push,
                  {wg, list_capacity(a.k)}});
  rec.dispatch(kernel, {in(a.values), out(a.out_values), out(a.out_indices)}, push,
               groups_1d(ceil_div(a.rows, per_group), 1));
}

}  // namespace

uint64_t topk_scratch_bytes(uint32_t rows, uint32_t n, uint32_t k, const TopKConfig& config,
                            bool log_softmax) {
  return layout(rows, n, k, config, log_softmax).total;
}

uint64_t topk_scratch_bytes(const Device& dev, DType dtype, uint32_t rows, uint32_t n, uint32_t k,
                            bool log_softmax) {
  return layout(rows, n, k, choose_topk(dev.info(), dev.tuning(), {dtype, rows, n, k}).config,
                log_softmax)
      .total;
}

void topk(Device& dev, Recorder& rec, const TopKArgs& a) {
  const std::string op = "topk k=" + std::to_string(a.k) + " of [" + std::to_string(a.rows) + ", " +
                         std::to_string(a.n) + "]";
  if (a.rows == 0 || a.n == 0) throw Error(op + ": empty input");
  if (a.k == 0 || a.k > a.n) throw Error(op + ": k must be in 1..n");
  TopKArgs resolved = a;
  resolved.config =
      choose_topk(dev.info(), dev.tuning(), {a.dtype, a.rows, a.n, a.k}, a.config).config;
  const TopKConfig& c = resolved.config;
  if (c.workgroup_size == 0) throw Error(op + ": workgroup_size 0 is not allowed");
  if (const std::string misfit = topk_config_misfit(dev.info(), c, {a.dtype, a.rows, a.n, a.k});
      !misfit.empty())
    throw Error(op + " (" + describe(c) + "): " + misfit);
  uint64_t in_elems = uint64_t{a.rows} * a.n;
  if (in_elems > 0xffffffffull) throw Error(op + ": more than 2^32 entries");
  check_storage_dtype(dev, a.dtype, op);
  if (a.values.size < in_elems * dtype_bytes(a.dtype))
    throw Error(op + ": values buffer too small");
  if (a.out_values.size < uint64_t{a.rows} * a.k * 4 ||
      a.out_indices.size < uint64_t{a.rows} * a.k * 4)
    throw Error(op + ": output buffers smaller than [rows, k]");
  if (c.path == TopKPath::subgroup_rows)
    run_rows(dev, rec, resolved);
  else
    run(dev, rec, resolved, op);
}

}  // namespace vkf::ops
