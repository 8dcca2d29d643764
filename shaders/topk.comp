#version 450
// Partial top-k: workgroup (chunk, row) takes C = WG * E consecutive entries of row `row` of
// [rows, n] and writes its k best, best first, to out[(row * chunks + chunk) * k ..]. Order is
// value descending, then index ascending (ties go to the lower index). The first pass takes
// values only (index = position); later passes merge earlier candidates (has_idx = 1) until one
// chunk is left, so the result equals a full sort by (value desc, index asc).
// Each of k rounds picks the workgroup's best remaining candidate by a tree reduction over the
// invocations' own bests; only the owner of the winner rescans its E entries. A round costs
// ~WG (log2(WG) + 2) steps, so a small workgroup with many entries each is the cheap shape
// (a bitonic sort of the chunk, tried first, did C log2(C)^2 / 4 work and was ~5x slower on
// lavapipe for k = 8).
// Slots past the end hold index k_none, which loses to every real entry (also to -inf).
// Pruning (first pass only, use_threshold = 1): thr[row * k + k - 1] is a lower bound of the
// row's k-th largest value (topk_thread_max.comp), so a chunk stops once its best remaining entry
// is below it and pads the rest of its k slots. A chunk also stops when only padding is left.
// topk_f16 reads fp16 values (16-bit storage only) in the first pass; the candidates it writes,
// and so the later passes, are fp32. Every fp16 value widens exactly, so order and ties are
// those of the fp16 inputs.
// With subtract_lse = 1 (the last pass of a top-k of logits, TopKArgs::log_softmax) each winner's
// value has lse[row] (log_sum_exp of log_softmax.comp) subtracted: its log-probability.
// vkf-variant: topk_f16 VKF_F16=1
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#else
#define STORE_T float
#endif
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;  // power of two
layout(constant_id = 1) const uint E = 32;    // entries per invocation, <= 32 (a bit mask)

layout(std430, binding = 0) readonly buffer InVal { STORE_T in_val[]; };    // [rows, n]
layout(std430, binding = 1) readonly buffer InIdx { uint in_idx[]; };       // [rows, n] if has_idx
layout(std430, binding = 2) writeonly buffer OutVal { float out_val[]; };   // [rows, chunks, k]
layout(std430, binding = 3) writeonly buffer OutIdx { uint out_idx[]; };    // [rows, chunks, k]
layout(std430, binding = 4) readonly buffer Thr { float thr[]; };           // [rows, k]
layout(std430, binding = 5) readonly buffer Lse { float lse[]; };           // [rows]
layout(push_constant) uniform Push {
  uint rows;
  uint n;
  uint k;
  uint chunks;
  uint has_idx;
  uint use_threshold;
  uint subtract_lse;
} p;

const uint k_none = 0xffffffffu;

shared float chunk_val[WG * E];
shared uint chunk_idx[WG * E];
shared float red_val[WG];
shared uint red_idx[WG];

bool better(float va, uint ia, float vb, uint ib) {
  if (ib == k_none) return ia != k_none;
  if (ia == k_none) return false;
  return va > vb || (va == vb && ia < ib);
}

void main() {
  uint chunk = gl_WorkGroupID.x;
  uint row = gl_WorkGroupID.y + gl_WorkGroupID.z * gl_NumWorkGroups.y;
  if (row >= p.rows) return;  // uniform over the workgroup
  uint t = gl_LocalInvocationID.x;
  uint begin = chunk * WG * E;

  // Entry j of this invocation is slot t + j * WG (coalesced loads).
  for (uint j = 0; j < E; ++j) {
    uint slot = t + j * WG;
    uint pos = begin + slot;
    float v = -3.402823466e38;
    uint id = k_none;
    if (pos < p.n) {
      v = float(in_val[row * p.n + pos]);
      id = p.has_idx != 0u ? in_idx[row * p.n + pos] : pos;
    }
    chunk_val[slot] = v;
    chunk_idx[slot] = id;
  }
  // Only this invocation touches its own slots, so no barrier is needed before the scan.
  uint taken = 0u;
  float best_v = -3.402823466e38;
  uint best_i = k_none, best_j = 0u;
  for (uint j = 0; j < E; ++j) {
    uint slot = t + j * WG;
    if (better(chunk_val[slot], chunk_idx[slot], best_v, best_i)) {
      best_v = chunk_val[slot];
      best_i = chunk_idx[slot];
      best_j = j;
    }
  }

  uint out_base = (row * p.chunks + chunk) * p.k;
  float threshold = p.use_threshold != 0u ? thr[row * p.k + p.k - 1u] : 0.0;
  float shift = p.subtract_lse != 0u ? lse[row] : 0.0;
  for (uint r = 0; r < p.k; ++r) {
    red_val[t] = best_v;
    red_idx[t] = best_i;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
      if (t < s && better(red_val[t + s], red_idx[t + s], red_val[t], red_idx[t])) {
        red_val[t] = red_val[t + s];
        red_idx[t] = red_idx[t + s];
      }
      barrier();
    }
    float win_v = red_val[0];
    uint win_i = red_idx[0];
    barrier();  // red_* is rewritten next round
    // Uniform: every invocation read the same winner.
    if (win_i == k_none || (p.use_threshold != 0u && win_v < threshold)) {
      for (uint q = r + t; q < p.k; q += WG) {
        out_val[out_base + q] = -3.402823466e38;
        out_idx[out_base + q] = k_none;
      }
      break;
    }
    if (t == 0) {
      out_val[out_base + r] = win_v - shift;
      out_idx[out_base + r] = win_i;
    }
    // Real indices are unique, so exactly one invocation owns the winner.
    if (win_i != k_none && win_i == best_i) {
      taken |= 1u << best_j;
      best_v = -3.402823466e38;
      best_i = k_none;
      for (uint j = 0; j < E; ++j) {
        uint slot = t + j * WG;
        if ((taken & (1u << j)) == 0u && better(chunk_val[slot], chunk_idx[slot], best_v, best_i)) {
          best_v = chunk_val[slot];
          best_i = chunk_idx[slot];
          best_j = j;
        }
      }
    }
  }
}
