#version 450
// Top-k with a subgroup per row, in one pass and without barriers: the same result as topk.comp
// (the k largest of each row of [rows, n], best first, ties to the lower index), for k <= KMAX.
// Each lane walks its columns (lane, lane + lanes, ...) keeping a sorted list of its KMAX best;
// then k rounds each take the best of the lanes' heads (subgroupMax of the values, subgroupMin
// of the indices that reach it) and the owner pops its head. Where a barrier costs far more than
// a longer loop (lavapipe runs a workgroup's subgroups as coroutines), this beats topk.comp's
// rounds of shared-memory reductions; the tuner times both on the device in front of it.
// The lists hold KMAX entries (a specialization constant, the smallest of 4, 8, 16, 32 >= k), so
// a lane keeps at least the k it may contribute.
// topk_rows_f16 reads fp16 values (16-bit storage only); lists, comparisons and outputs are fp32,
// which hold every fp16 value exactly.
// The _lsm variants (VKF_LOG_SOFTMAX) take logits and write their winners' log-softmax: each
// lane also keeps an online max and rescaled sum of exponentials of its columns in the same
// pass, the subgroup folds them into the row's log-sum-exp, and only the k winners have it
// subtracted (the order of the raw logits is the order of the log-probabilities). That replaces
// a log_softmax pass that read the row twice and wrote it once.
// vkf-variant: topk_rows_f16 VKF_F16=1
// vkf-variant: topk_rows_lsm VKF_LOG_SOFTMAX=1
// vkf-variant: topk_rows_lsm_f16 VKF_LOG_SOFTMAX=1 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#else
#define STORE_T float
#endif
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint KMAX = 8;

layout(std430, binding = 0) readonly buffer InVal { STORE_T in_val[]; };   // [rows, n]
layout(std430, binding = 1) writeonly buffer OutVal { float out_val[]; };  // [rows, k]
layout(std430, binding = 2) writeonly buffer OutIdx { uint out_idx[]; };   // [rows, k]
layout(push_constant) uniform Push {
  uint rows;
  uint n;
  uint k;
  uint rows_per_group;  // rows a workgroup covers (its subgroups share them)
} p;

const uint k_none = 0xffffffffu;
const float k_pad = -3.402823466e38;  // what topk.comp writes for a missing entry
const float k_neg_inf = -1.0 / 0.0;

// topk.comp's order: value descending, then index ascending; k_none loses to every real entry.
bool better(float va, uint ia, float vb, uint ib) {
  if (ib == k_none) return ia != k_none;
  if (ia == k_none) return false;
  return va > vb || (va == vb && ia < ib);
}

#include "online_lse.glsl"

float list_v[KMAX];
uint list_i[KMAX];

void top_of_row(uint row, uint lane, uint lanes) {
  for (uint j = 0; j < KMAX; ++j) {
    list_v[j] = k_pad;
    list_i[j] = k_none;
  }
  const uint base = row * p.n;
  // Increasing columns: an entry equal to one already listed has the higher index and stays
  // behind it.
  // Below the list's last entry nothing enters (one compare: the common case); while the list
  // has room that is -inf, which a -inf entry does not fall below.
  float floor_v = k_neg_inf;
#ifdef VKF_LOG_SOFTMAX
  float m = k_pad, s = 0.0;  // this lane's max and sum of exp(v - m) (online_lse.glsl)
#endif
  for (uint c = lane; c < p.n; c += lanes) {
    float v = float(in_val[base + c]);
#ifdef VKF_LOG_SOFTMAX
    lse_add(m, s, v);
#endif
    if (v < floor_v) continue;
    uint i = c;
    if (!better(v, i, list_v[KMAX - 1], list_i[KMAX - 1])) continue;
    // One pass of insertion with fixed indices (registers, not local memory, on GPUs).
    for (uint j = 0; j < KMAX; ++j) {
      if (better(v, i, list_v[j], list_i[j])) {
        const float tv = list_v[j];
        const uint ti = list_i[j];
        list_v[j] = v;
        list_i[j] = i;
        v = tv;
        i = ti;
      }
    }
    floor_v = list_i[KMAX - 1] == k_none ? k_neg_inf : list_v[KMAX - 1];
  }

#ifdef VKF_LOG_SOFTMAX
  const float row_max = subgroupMax(m);
  const float lse = row_max + log(subgroupAdd(lse_share(m, s, row_max)));
#else
  const float lse = 0.0;
#endif
  const uint out_base = row * p.k;
  for (uint r = 0; r < p.k; ++r) {
    // A missing entry compares as -inf and loses the tie to any real one (by its index).
    const float key = list_i[0] == k_none ? k_neg_inf : list_v[0];
    const float best = subgroupMax(key);
    const uint win = subgroupMin(key == best ? list_i[0] : k_none);
    if (win == k_none) {  // uniform: fewer than k entries in the row (k <= n rules it out)
      for (uint q = r + lane; q < p.k; q += lanes) {
        out_val[out_base + q] = k_pad;
        out_idx[out_base + q] = k_none;
      }
      return;
    }
    if (lane == 0u) {
      out_val[out_base + r] = best - lse;
      out_idx[out_base + r] = win;
    }
    if (list_i[0] == win) {  // real indices are unique: one owner
      for (uint j = 0; j + 1 < KMAX; ++j) {
        list_v[j] = list_v[j + 1];
        list_i[j] = list_i[j + 1];
      }
      list_v[KMAX - 1] = k_pad;
      list_i[KMAX - 1] = k_none;
    }
  }
}

void main() {
  const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  // As layer_norm_forward_sgrow: the host does not know the subgroup size a pipeline gets, so a
  // workgroup covers a fixed range of rows and its subgroups share it; loop bounds are
  // subgroup-uniform, and the lane rank counts the active invocations (partial subgroups too).
  const uint lanes = subgroupAdd(1u), lane = subgroupExclusiveAdd(1u);
  const uint last = min(p.rows, (group + 1u) * p.rows_per_group);
  for (uint row = group * p.rows_per_group + gl_SubgroupID; row < last; row += gl_NumSubgroups)
    top_of_row(row, lane, lanes);
}
