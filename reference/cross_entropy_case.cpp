#include "reference/cross_entropy_case.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <utility>

#include "engine/error.h"
#include "engine/ops/loss_choice.h"
#include "engine/step_scalars.h"
#include "reference/loss.h"
#include "reference/stored.h"

namespace vkf::ref {
namespace {

using Grad = CrossEntropyCase::Grad;

// A buffer of `count` elements of t holding the poison, exactly that size (the ops' size checks
// see what a caller's buffer would be).
Buffer poisoned(Device& dev, size_t count, DType t, const char* what) {
  Buffer b = dev.allocate(std::max<size_t>(count, 1) * dtype_bytes(t), what);
  poison(dev, b, count, t);
  return b;
}

bool ignored(int32_t target, const CrossEntropyCase& c) {
  return target == c.pad_id || target < 0 || uint32_t(target) >= c.vocab;
}

}  // namespace

std::string CrossEntropyCase::describe() const {
  std::ostringstream s;
  s << "[" << rows << ", " << vocab << "] pad " << pad_id << ", eps " << label_smoothing
    << ", grad x" << grad_scale << ", " << ops::describe(config) << ", "
    << (grad == Grad::separate   ? "gradient"
        : grad == Grad::in_place ? "in place"
                                 : "no gradient")
    << (totals ? ", totals" : "") << ", " << dtype_name(dtype);
  return s.str();
}

CrossEntropyInputs random_cross_entropy_inputs(const CrossEntropyCase& c, std::mt19937& rng) {
  CrossEntropyInputs in;
  in.logits = random_stored(rng, size_t{c.rows} * c.vocab, c.dtype, -c.logit_range, c.logit_range);
  in.targets.resize(c.rows);
  for (uint32_t r = 0; r < c.rows; ++r) {
    int32_t& t = in.targets[r];
    t = int32_t(rng() % c.vocab);
    if (t == c.pad_id) t = int32_t((uint32_t(c.pad_id) + 1) % c.vocab);
    if (r % 3 == 2) t = c.pad_id;
  }
  if (c.rows > 4) in.targets[c.rows - 1] = -1;  // outside the vocabulary: ignored too
  return in;
}

CrossEntropyTolerance cross_entropy_tolerance(DType t, float grad_scale) {
  return {{2e-5, 1e-5}, {1e-6 * grad_scale, t == DType::f16 ? 1e-3 : 1e-4}, {1e-4, 1e-5}};
}

CrossEntropyRun::CrossEntropyRun(Device& dev, const CrossEntropyCase& c, CrossEntropyInputs inputs)
    : dev_(dev), c_(c), in_(std::move(inputs)) {
  const size_t n = size_t{c_.rows} * c_.vocab;
  if (in_.logits.size() != n || in_.targets.size() != c_.rows)
    throw Error("cross-entropy case: the inputs do not have the shape of " + c_.describe());
  logits_ = upload_stored(dev, in_.logits, c_.dtype, "logits");
  targets_ = dev.allocate(std::max<size_t>(c_.rows, 1) * 4, "targets");
  dev.upload(targets_, in_.targets);
  step_ = dev.allocate(sizeof(StepScalars), "step scalars", MemoryKind::host);
  set_grad_scale(c_.grad_scale);
  row_loss_ = poisoned(dev, c_.rows, DType::f32, "row loss");
  row_logp_ = poisoned(dev, c_.rows, DType::f32, "row log p");
  if (c_.grad == Grad::separate) dlogits_ = poisoned(dev, n, c_.dtype, "dlogits");
  if (c_.totals) totals_ = poisoned(dev, sizeof(ops::CrossEntropyTotals) / 4, DType::f32, "totals");
}

void CrossEntropyRun::set_grad_scale(float grad_scale) {
  c_.grad_scale = grad_scale;
  StepScalars st;
  st.grad_scale = grad_scale;
  std::memcpy(step_.mapped(), &st, sizeof st);
}

void CrossEntropyRun::record(Recorder& rec) const {
  ops::CrossEntropyArgs a;
  a.dtype = c_.dtype, a.logits = logits_, a.targets = targets_;
  a.row_loss = row_loss_, a.row_logp = row_logp_;
  a.rows = c_.rows, a.vocab = c_.vocab, a.pad_id = c_.pad_id;
  a.label_smoothing = c_.label_smoothing, a.config = c_.config;
  if (c_.grad != Grad::none) {  // without a gradient the step scalars may be left out
    a.step = step_;
    a.dlogits = c_.grad == Grad::in_place ? logits_ : dlogits_;
  }
  ops::cross_entropy(dev_, rec, a);
  if (c_.totals)
    ops::cross_entropy_total(dev_, rec,
                             {.row_loss = row_loss_,
                              .row_logp = row_logp_,
                              .targets = targets_,
                              .out = totals_,
                              .rows = c_.rows,
                              .vocab = c_.vocab,
                              .pad_id = c_.pad_id,
                              .workgroup_size = c_.config.workgroup_size});
}

void CrossEntropyRun::corrupt(Recorder& rec) const {
  const Buffer& out = c_.grad == Grad::separate   ? dlogits_
                      : c_.grad == Grad::in_place ? logits_
                                                  : row_loss_;
  rec.fill(out.ref().slice(0, 4), k_wrong_bits);
}

CrossEntropyOutputs CrossEntropyRun::outputs() const {
  const size_t n = size_t{c_.rows} * c_.vocab;
  CrossEntropyOutputs o;
  o.loss = dev_.download<float>(row_loss_, c_.rows);
  o.logp = dev_.download<float>(row_logp_, c_.rows);
  o.logits = download_stored(dev_, logits_, n, c_.dtype);
  if (c_.grad == Grad::separate) o.dlogits = download_stored(dev_, dlogits_, n, c_.dtype);
  if (c_.grad == Grad::in_place) o.dlogits = o.logits;
  if (c_.totals) o.totals = dev_.download<ops::CrossEntropyTotals>(totals_, 1)[0];
  return o;
}

namespace {

// The row loss, the row log p and the gradient (or the logits, untouched) of `got` against the
// reference on `in`, the inputs of case c.
std::vector<Comparison> compare_rows_of(const CrossEntropyCase& c, const CrossEntropyInputs& in,
                                        const CrossEntropyOutputs& got,
                                        const CrossEntropyTolerance& tol) {
  const CrossEntropyResult want = cross_entropy(in.logits, in.targets, c.rows, c.vocab, c.pad_id,
                                                c.label_smoothing, c.grad_scale);
  std::vector<Comparison> out{Comparison("row loss"), Comparison("row log p")};
  out[0].add_all(got.loss, want.row_loss, tol.loss.atol, tol.loss.rtol);
  out[1].add_all(got.logp, want.row_logp, tol.loss.atol, tol.loss.rtol);
  if (c.grad != Grad::none) {
    Comparison& d = out.emplace_back("dlogits");
    for (size_t i = 0; i < got.dlogits.size(); ++i) {
      if (ignored(in.targets[i / c.vocab], c))
        d.add_exact(got.dlogits[i] == 0.0f, got.dlogits[i], 0.0);
      else
        d.add(got.dlogits[i], want.dlogits[i], want.dlogits[i], tol.grad);
    }
  } else {
    Comparison& l = out.emplace_back("logits");  // untouched
    for (size_t i = 0; i < got.logits.size(); ++i)
      l.add_exact(got.logits[i] == in.logits[i], got.logits[i], in.logits[i]);
  }
  return out;
}

}  // namespace

std::vector<Comparison> CrossEntropyRun::compare(const CrossEntropyTolerance& tol) const {
  const CrossEntropyOutputs got = outputs();
  std::vector<Comparison> out = compare_rows_of(c_, in_, got, tol);
  if (c_.totals) {
    const CrossEntropyResult want = cross_entropy(in_.logits, in_.targets, c_.rows, c_.vocab,
                                                  c_.pad_id, c_.label_smoothing, c_.grad_scale);
    Comparison& t = out.emplace_back("totals");
    t.add_exact(got.totals.tokens == want.tokens, got.totals.tokens, want.tokens);
    t.add(got.totals.loss_sum, want.loss_sum, want.loss_sum, tol.totals);
    t.add(got.totals.logp_sum, want.logp_sum, want.logp_sum, tol.totals);
    t.add_exact(got.totals.reserved == 0, got.totals.reserved, 0);
  }
  return out;
}

std::vector<Comparison> CrossEntropyRun::compare_rows(const CrossEntropyTolerance& tol,
                                                      const std::vector<uint32_t>& rows) const {
  if (c_.totals) throw Error("cross-entropy case: the totals are compared over every row");
  CrossEntropyCase sub = c_;
  sub.rows = uint32_t(rows.size());
  const uint64_t row_bytes = uint64_t{c_.vocab} * dtype_bytes(c_.dtype);
  const Buffer& grad = c_.grad == Grad::separate ? dlogits_ : logits_;
  const std::vector<float> loss = dev_.download<float>(row_loss_, c_.rows),
                           logp = dev_.download<float>(row_logp_, c_.rows);
  CrossEntropyInputs in;
  CrossEntropyOutputs got;
  for (uint32_t r : rows) {
    if (r >= c_.rows)
      throw Error("cross-entropy case: row " + std::to_string(r) + " of " + c_.describe());
    const auto first = in_.logits.begin() + int64_t(size_t{r} * c_.vocab);
    in.logits.insert(in.logits.end(), first, first + c_.vocab);
    in.targets.push_back(in_.targets[r]);
    got.loss.push_back(loss[r]);
    got.logp.push_back(logp[r]);
    const std::vector<float> row =
        download_stored(dev_, logits_.ref().slice(r * row_bytes, row_bytes), c_.vocab, c_.dtype);
    got.logits.insert(got.logits.end(), row.begin(), row.end());
    if (c_.grad != Grad::none) {
      const std::vector<float> g =
          download_stored(dev_, grad.ref().slice(r * row_bytes, row_bytes), c_.vocab, c_.dtype);
      got.dlogits.insert(got.dlogits.end(), g.begin(), g.end());
    }
  }
  return compare_rows_of(sub, in, got, tol);
}

}  // namespace vkf::ref
