// One-pass (online) log-sum-exp, shared by the softmax kernels (cross_entropy, log_softmax and
// topk_rows' log-softmax variant): each invocation keeps a running max m of its values and the
// sum s of exp(v - m), rescaled whenever m grows, so a row is read once. The invocations' pairs
// are then folded with the row's max: log sum exp = row_max + log(sum of lse_share(m, s, row_max)).
// Start from m = the lowest float and s = 0; -inf values add nothing.
void lse_add(inout float m, inout float s, float v) {
  if (v > m) {
    s = s * exp(m - v) + 1.0;
    m = v;
  } else {
    s += exp(v - m);
  }
}

// This invocation's sum rescaled to the row's max (0 where it saw nothing but -inf).
float lse_share(float m, float s, float row_max) {
  return s > 0.0 ? s * exp(m - row_max) : 0.0;
}
