#include "reference/topk_case.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

#include "engine/error.h"
#include "reference/loss.h"
#include "reference/stored.h"
#include "reference/topk.h"

namespace vkf::ref {

std::string TopKCase::describe() const {
  std::ostringstream s;
  s << "[" << rows << ", " << n << "] k " << k << ", "
    << (config.path == ops::TopKPath::automatic ? std::string("the engine's choice")
                                                : ops::describe(config))
    << ", " << dtype_name(dtype) << (log_softmax ? ", log-softmax" : "");
  return s.str();
}

std::vector<float> random_topk_values(const TopKCase& c, TopKValues kind, std::mt19937& rng) {
  const size_t count = size_t{c.rows} * c.n;
  if (kind == TopKValues::rounded) return stored(uniform(rng, count), DType::f16);
  constexpr float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(count);
  for (float& v : x) v = float(int(rng() % 200) - 150) * 0.125f;
  for (size_t i = 0; i < count; ++i)
    if (kind == TopKValues::masked ? i % 1700 != 5 : i % 7 == 0) x[i] = -inf;
  return x;
}

TopKRun::TopKRun(Device& dev, const TopKCase& c, std::vector<float> values)
    : dev_(dev), c_(c), x_(stored(std::move(values), c.dtype)) {
  if (x_.size() != size_t{c_.rows} * c_.n)
    throw Error("top-k case: the values do not have the shape of " + c_.describe());
  values_ = upload_stored(dev, x_, c_.dtype, "values");
  const size_t out = std::max<size_t>(size_t{c_.rows} * c_.k, 1);
  out_values_ = dev.allocate(out * 4, "top values");
  out_indices_ = dev.allocate(out * 4, "top indices");
  poison(dev, out_values_, out, DType::f32);
  dev.upload(out_indices_, std::vector<uint32_t>(out, 0xdeadbeefu));
  // An automatic configuration's scratch is what the device's tuning (or default) needs.
  const uint64_t scratch =
      c_.config.path == ops::TopKPath::automatic
          ? ops::topk_scratch_bytes(dev, c_.dtype, c_.rows, c_.n, c_.k, c_.log_softmax)
          : ops::topk_scratch_bytes(c_.rows, c_.n, c_.k, c_.config, c_.log_softmax);
  scratch_ = dev.allocate(std::max<uint64_t>(16, scratch), "top-k scratch");
}

ops::TopKArgs TopKRun::args() const {
  return {.dtype = c_.dtype,
          .values = values_,
          .out_values = out_values_,
          .out_indices = out_indices_,
          .scratch = scratch_,
          .rows = c_.rows,
          .n = c_.n,
          .k = c_.k,
          .config = c_.config,
          .log_softmax = c_.log_softmax};
}

void TopKRun::record(Recorder& rec) const {
  ops::topk(dev_, rec, args());
}

void TopKRun::corrupt(Recorder& rec) const {
  rec.fill(out_indices_.ref().slice(0, 4), k_wrong_bits);
}

TopKOutputs TopKRun::outputs() const {
  const size_t out = size_t{c_.rows} * c_.k;
  return {dev_.download<float>(out_values_, out), dev_.download<uint32_t>(out_indices_, out)};
}

std::vector<Comparison> TopKRun::compare() const {
  const TopKOutputs got = outputs();
  const TopKResult want = topk(x_, c_.rows, c_.n, c_.k);
  const std::vector<double> lse =
      c_.log_softmax ? row_log_sum_exp(x_, c_.rows, c_.n) : std::vector<double>{};
  std::vector<Comparison> cmp{Comparison("indices"), Comparison("values")};
  for (size_t j = 0; j < got.indices.size(); ++j) {
    cmp[0].add_exact(got.indices[j] == want.indices[j], got.indices[j], want.indices[j]);
    const double w = c_.log_softmax ? double(want.values[j]) - lse[j / c_.k] : want.values[j];
    if (c_.log_softmax && std::isfinite(w))
      cmp[1].add(got.values[j], w, w, k_topk_log_softmax_tolerance);
    else  // exact; a masked winner's log-probability is -inf too
      cmp[1].add_exact(double(got.values[j]) == w, got.values[j], w);
  }
  return cmp;
}

}  // namespace vkf::ref
