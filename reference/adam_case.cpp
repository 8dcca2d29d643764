#include "reference/adam_case.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <utility>

#include "engine/error.h"
#include "engine/step_scalars.h"
#include "reference/optim.h"
#include "reference/stored.h"

namespace vkf::ref {

std::string AdamCase::describe() const {
  std::ostringstream s;
  s << n << " parameters, step " << step;
  if (grad_scale != 1.0f) s << ", grad x" << grad_scale;
  if (lr_scale != 1.0f) s << ", lr x" << lr_scale;
  if (options.max_grad_norm > 0) s << ", clip " << options.max_grad_norm;
  if (options.weight_decay > 0) s << ", decay " << options.weight_decay;
  if (options.schedule == ops::LrSchedule::constant) s << ", constant lr";
  if (!norm) s << ", no norm buffer";
  s << ", " << (config ? ops::describe(*config) : std::string("the engine's choice"));
  return s.str();
}

AdamInputs random_adam_inputs(const AdamCase& c, std::mt19937& rng) {
  AdamInputs in;
  in.w = uniform(rng, c.n);
  in.g = uniform(rng, c.n);
  in.m = uniform(rng, c.n, -c.m_range, c.m_range);
  in.v = uniform(rng, c.n, 0.0f, c.v_range);
  return in;
}

AdamTolerance adam_tolerance() {
  // w: fp32 rounding of w (2^-24 |w|, under 6e-8 for |w| < 1) in the atol; the update's own
  // arithmetic (a power, a square root, a division in fp32) well inside 1e-3 of it. m and v:
  // fp32 arithmetic on the size of their two terms (compare's scale), so that an m that
  // cancels towards 0 is not held to its own tiny magnitude.
  return {{2.5e-7, 1e-3}, {1e-12, 1e-5}, {1e-15, 1e-5}};
}

AdamRun::AdamRun(Device& dev, const AdamCase& c, AdamInputs inputs)
    : dev_(dev), c_(c), in_(std::move(inputs)) {
  if (in_.w.size() != c_.n || in_.g.size() != c_.n || in_.m.size() != c_.n || in_.v.size() != c_.n)
    throw Error("adam case: the inputs do not have the shape of " + c_.describe());
  w_ = upload_stored(dev, in_.w, DType::f32, "w");
  g_ = upload_stored(dev, in_.g, DType::f32, "g");
  m_ = upload_stored(dev, in_.m, DType::f32, "m");
  v_ = upload_stored(dev, in_.v, DType::f32, "v");
  step_ = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  StepScalars st;
  st.step = c_.step;
  st.grad_scale = c_.grad_scale;
  st.lr_scale = c_.lr_scale;
  std::memcpy(step_.mapped(), &st, sizeof st);
  norm_ = grad_norm({in_.g});
  if (c_.norm) {  // what ops::grad_norm would have written for this gradient
    ops::GradNormResult r;
    r.sum_squares = float(norm_ * norm_);
    r.norm = float(norm_);
    r.nonfinite = std::isfinite(r.sum_squares) ? 0 : 1;
    norm_buffer_ = dev.allocate(sizeof r, "grad norm");
    dev.upload(norm_buffer_, std::vector<ops::GradNormResult>{r});
  }
}

ops::AdamArgs AdamRun::args() const {
  ops::AdamArgs a;
  a.params = w_, a.grads = g_, a.m = m_, a.v = v_, a.step = step_;
  if (c_.norm) a.grad_norm = norm_buffer_;
  a.n = c_.n, a.options = c_.options, a.config = c_.config;
  return a;
}

void AdamRun::record(Recorder& rec) const {
  ops::adam(dev_, rec, args());
}

void AdamRun::corrupt(Recorder& rec) const {
  rec.fill(w_.ref().slice(0, 4), k_wrong_bits);
}

std::vector<Comparison> AdamRun::compare(const AdamTolerance& tol,
                                         const std::vector<uint32_t>& sampled) const {
  std::vector<uint32_t> at = sampled;
  if (at.empty())
    for (uint32_t i = 0; i < c_.n; ++i) at.push_back(i);
  AdamState want;
  std::vector<float> g;
  for (uint32_t i : at) {
    if (i >= c_.n) throw Error("adam case: element " + std::to_string(i) + " of " + c_.describe());
    want.w.push_back(in_.w[i]), want.m.push_back(in_.m[i]), want.v.push_back(in_.v[i]);
    g.push_back(in_.g[i]);
  }
  adam_step(want, g, c_.options, c_.step, c_.grad_scale, c_.lr_scale, norm_);
  const std::vector<float> w = dev_.download<float>(w_, c_.n), m = dev_.download<float>(m_, c_.n),
                           v = dev_.download<float>(v_, c_.n);
  std::vector<Comparison> out{Comparison("w"), Comparison("m"), Comparison("v")};
  for (size_t j = 0; j < at.size(); ++j) {
    const uint32_t i = at[j];
    out[0].add(w[i], want.w[j], want.w[j] - in_.w[i], tol.w_update);
    // m = b1 m + (1 - b1) g': the two terms' sizes, the second read back from the reference.
    const double b1m = double(c_.options.beta1) * in_.m[i],
                 b2v = double(c_.options.beta2) * in_.v[i];
    out[1].add(m[i], want.m[j], std::fabs(b1m) + std::fabs(want.m[j] - b1m), tol.m);
    out[2].add(v[i], want.v[j], std::fabs(b2v) + std::fabs(want.v[j] - b2v), tol.v);
  }
  return out;
}

}  // namespace vkf::ref
