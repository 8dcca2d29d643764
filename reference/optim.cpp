#include "reference/optim.h"

#include <algorithm>
#include <cmath>

namespace vkf::ref {

double adam_learning_rate(const ops::AdamOptions& o, uint32_t step, double lr_scale) {
  double t = std::max<uint32_t>(step, 1);
  double lr = double(o.lr) * lr_scale;
  if (o.schedule == ops::LrSchedule::noam)
    lr *= std::pow(double(o.d_model), -0.5) *
          std::min(std::pow(t, -0.5), t * std::pow(double(o.warmup_steps), -1.5));
  return lr;
}

double grad_norm(const std::vector<std::vector<float>>& grads) {
  double s = 0;
  for (const auto& g : grads)
    for (float x : g) s += double(x) * x;
  return std::sqrt(s);
}

bool adam_step(AdamState& s, const std::vector<float>& grad, const ops::AdamOptions& o,
               uint32_t step, double grad_scale, double lr_scale, double norm) {
  if (o.skip_nonfinite && !std::isfinite(norm * norm)) return false;
  double t = std::max<uint32_t>(step, 1);
  double lr = adam_learning_rate(o, step, lr_scale);
  double scale = grad_scale;
  if (o.max_grad_norm > 0 && grad_scale * norm > o.max_grad_norm)
    scale *= o.max_grad_norm / (grad_scale * norm);
  double b1 = o.beta1, b2 = o.beta2;
  for (size_t i = 0; i < grad.size(); ++i) {
    double g = grad[i] * scale;
    s.m[i] = b1 * s.m[i] + (1 - b1) * g;
    s.v[i] = b2 * s.v[i] + (1 - b2) * g * g;
    double m_hat = s.m[i] / (1 - std::pow(b1, t));
    double v_hat = s.v[i] / (1 - std::pow(b2, t));
    s.w[i] = s.w[i] * (1 - lr * o.weight_decay) - lr * m_hat / (std::sqrt(v_hat) + o.eps);
  }
  return true;
}

}  // namespace vkf::ref
