#include "reference/layer_norm_case.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <utility>

#include "engine/error.h"
#include "engine/step_scalars.h"
#include "reference/layer_norm.h"
#include "reference/stored.h"

namespace vkf::ref {
namespace {

constexpr double k_eps = 1e-6;

// want + start, where the backward added to `start` (accumulate), else want.
std::vector<double> plus(std::vector<double> want, const std::vector<float>& start) {
  for (size_t i = 0; i < start.size(); ++i) want[i] += start[i];
  return want;
}

// A buffer of `count` elements of t holding the poison, exactly that size (the ops' size checks
// see what a caller's buffer would be).
Buffer poisoned(Device& dev, size_t count, DType t, const char* what) {
  Buffer b = dev.allocate(std::max<size_t>(count, 1) * dtype_bytes(t), what);
  poison(dev, b, count, t);
  return b;
}

}  // namespace

std::string LayerNormCase::describe() const {
  std::ostringstream s;
  s << rows << " rows of " << d;
  if (residual) s << ", residual";
  if (dropout > 0) s << ", dropout " << dropout;
  s << ", " << ops::describe(config) << ", " << dtype_name(dtype);
  if (accumulate) s << ", accumulating";
  if (sentence_len) s << ", from batch row " << dropout_row << " of " << sentence_len << " rows";
  return s.str();
}

LayerNormInputs random_layer_norm_inputs(const LayerNormCase& c, std::mt19937& rng) {
  const size_t n = size_t{c.rows} * c.d;
  const DType t = c.dtype;
  LayerNormInputs in;
  in.x = random_stored(rng, n, t, 2.0f, 4.0f);
  if (c.residual) in.s = random_stored(rng, n, t);
  in.gamma = uniform(rng, c.d, 0.5f, 1.5f);
  in.beta = uniform(rng, c.d);
  in.dy = random_stored(rng, n, t);
  if (c.accumulate) {
    in.dx0 = random_stored(rng, n, t);
    in.dparams0 = uniform(rng, c.d);
  }
  return in;
}

LayerNormTolerance layer_norm_tolerance(DType t) {
  const Tolerance mean{1e-5, 1e-5}, rstd{1e-5, 1e-4}, params{1e-4, 1e-4};
  if (t == DType::f16) return {{1e-6, 5e-4}, {1e-4, 1e-3}, mean, rstd, {1e-4, 1e-3}, params};
  return {{1e-6, 1e-6}, {2e-5, 1e-4}, mean, rstd, {5e-5, 1e-4}, params};
}

LayerNormRun::LayerNormRun(Device& dev, const LayerNormCase& c, LayerNormInputs inputs)
    : dev_(dev), c_(c), in_(std::move(inputs)) {
  const size_t n = size_t{c_.rows} * c_.d;
  const DType t = c_.dtype;
  if (in_.x.size() != n || in_.dy.size() != n || in_.gamma.size() != c_.d ||
      in_.beta.size() != c_.d || (c_.residual && in_.s.size() != n) ||
      (c_.accumulate && (in_.dx0.size() != n || in_.dparams0.size() != c_.d)))
    throw Error("layer norm case: the inputs do not have the shape of " + c_.describe());
  x_ = upload_stored(dev, in_.x, t, "x");
  if (c_.residual) s_ = upload_stored(dev, in_.s, t, "s");
  gamma_ = upload_stored(dev, in_.gamma, DType::f32, "gamma");
  beta_ = upload_stored(dev, in_.beta, DType::f32, "beta");
  dy_ = upload_stored(dev, in_.dy, t, "dy");
  y_ = poisoned(dev, n, t, "y");
  if (c_.residual) {
    h_ = poisoned(dev, n, t, "h");
    ds_ = poisoned(dev, n, t, "ds");
  }
  mean_ = poisoned(dev, c_.rows, DType::f32, "mean");
  rstd_ = poisoned(dev, c_.rows, DType::f32, "rstd");
  if (c_.accumulate) {
    dx_ = upload_stored(dev, in_.dx0, t, "dx");
    dgamma_ = upload_stored(dev, in_.dparams0, DType::f32, "dgamma");
    dbeta_ = upload_stored(dev, in_.dparams0, DType::f32, "dbeta");
  } else {
    dx_ = poisoned(dev, n, t, "dx");
    dgamma_ = poisoned(dev, c_.d, DType::f32, "dgamma");
    dbeta_ = poisoned(dev, c_.d, DType::f32, "dbeta");
  }
  // The backward must write its partial sums before it reads them.
  const uint64_t scratch = ops::layer_norm_backward_scratch_bytes(c_.rows, c_.d);
  scratch_ = poisoned(dev, scratch / 4, DType::f32, "scratch");
  step_ = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  StepScalars st;
  st.seed = c_.seed;
  st.step = c_.step;
  st.dropout_row = c_.dropout_row;
  std::memcpy(step_.mapped(), &st, sizeof st);
}

ops::LayerNormForwardArgs LayerNormRun::forward_args() const {
  ops::LayerNormForwardArgs f;
  f.dtype = c_.dtype;
  f.x = x_;
  if (c_.residual) f.s = s_, f.h = h_;
  f.gamma = gamma_, f.beta = beta_, f.y = y_, f.mean = mean_, f.rstd = rstd_, f.step = step_;
  f.rows = c_.rows, f.d = c_.d, f.eps = float(k_eps);
  f.dropout = c_.dropout, f.tensor_id = k_layer_norm_tensor_id;
  f.batch_row_rows = c_.sentence_len;
  f.workgroup_size = c_.config.workgroup_size, f.reduce = c_.config.reduce;
  f.reads = c_.config.reads;
  return f;
}

ops::LayerNormBackwardArgs LayerNormRun::backward_args() const {
  ops::LayerNormBackwardArgs b;
  b.dtype = c_.dtype;
  b.dy = dy_;
  b.h = c_.residual ? h_ : x_;
  b.gamma = gamma_, b.mean = mean_, b.rstd = rstd_, b.dx = dx_;
  if (c_.residual) b.ds = ds_;
  b.dgamma = dgamma_, b.dbeta = dbeta_, b.scratch = scratch_, b.step = step_;
  b.rows = c_.rows, b.d = c_.d;
  b.dropout = c_.dropout, b.tensor_id = k_layer_norm_tensor_id;
  b.batch_row_rows = c_.sentence_len;
  b.accumulate_dx = b.accumulate_params = c_.accumulate;
  b.workgroup_size = c_.config.workgroup_size, b.reduce = c_.config.reduce;
  b.reads = c_.config.reads;
  return b;
}

void LayerNormRun::record(Recorder& rec) const {
  ops::layer_norm_forward(dev_, rec, forward_args());
  ops::layer_norm_backward(dev_, rec, backward_args());
}

void LayerNormRun::corrupt(Recorder& rec) const {
  rec.fill(y_.ref().slice(0, 4), k_wrong_bits);
}

LayerNormOutputs LayerNormRun::outputs() const {
  const size_t n = size_t{c_.rows} * c_.d;
  const DType t = c_.dtype;
  LayerNormOutputs o;
  o.y = download_stored(dev_, y_, n, t);
  if (c_.residual) o.h = download_stored(dev_, h_, n, t);
  o.mean = dev_.download<float>(mean_, c_.rows);
  o.rstd = dev_.download<float>(rstd_, c_.rows);
  o.dx = download_stored(dev_, dx_, n, t);
  if (c_.residual) o.ds = download_stored(dev_, ds_, n, t);
  o.dgamma = dev_.download<float>(dgamma_, c_.d);
  o.dbeta = dev_.download<float>(dbeta_, c_.d);
  return o;
}

std::vector<Comparison> LayerNormRun::compare(const LayerNormTolerance& tol) const {
  if (c_.residual && c_.dropout > 0 && c_.sentence_len && c_.dropout_row)
    throw Error("layer norm case: no reference for the mask of a share of a batch");
  const uint32_t rows = c_.rows, d = c_.d;
  const size_t n = size_t{rows} * d;
  const LayerNormOutputs got = outputs();
  const std::vector<double> mask =
      c_.residual ? dropout_mask(uint32_t(n), c_.dropout, c_.seed, c_.step, k_layer_norm_tensor_id)
                  : std::vector<double>{};
  const std::vector<double> x = to_double(in_.x), gamma = to_double(in_.gamma),
                            beta = to_double(in_.beta), dy = to_double(in_.dy);
  std::vector<Comparison> out;
  if (c_.residual) {
    const LayerNormForward exact =
        layer_norm_forward(x, to_double(in_.s), mask, gamma, beta, rows, d, k_eps);
    out.emplace_back("h");
    out.back().add_all(got.h, exact.h, tol.h.atol, tol.h.rtol);
  }
  const std::vector<double> h = c_.residual ? to_double(got.h) : x;
  const LayerNormForward want = layer_norm_forward(h, {}, {}, gamma, beta, rows, d, k_eps);
  const LayerNormGrads grads = layer_norm_backward(dy, h, {}, {}, gamma, rows, d, k_eps);
  auto compared = [&](const char* what, const std::vector<float>& g, const std::vector<double>& w,
                      const Tolerance& t) {
    out.emplace_back(what);
    out.back().add_all(g, w, t.atol, t.rtol);
  };
  compared("y", got.y, want.y, tol.y);
  compared("mean", got.mean, want.mean, tol.mean);
  compared("rstd", got.rstd, want.rstd, tol.rstd);
  compared("dx", got.dx, plus(grads.dx, in_.dx0), tol.dx);
  if (c_.residual) {
    // ds = dh * mask, the chain rule through h = x + mask * s; the forward's mask exactly.
    Comparison ds("ds");
    for (size_t i = 0; i < n; ++i) {
      if (mask[i] == 0.0)
        ds.add_exact(got.ds[i] == 0.0f, got.ds[i], 0.0);
      else
        ds.add(got.ds[i], grads.dx[i] * mask[i], grads.dx[i] * mask[i], tol.dx);
    }
    out.push_back(ds);
  }
  compared("dgamma", got.dgamma, plus(grads.dgamma, in_.dparams0), tol.params);
  compared("dbeta", got.dbeta, plus(grads.dbeta, in_.dparams0), tol.params);
  return out;
}

}  // namespace vkf::ref
