#version 450
// Embedding backward as a deterministic scatter-add, dW[key(t), :] += scale * mask * dout[t, :],
// without float atomics. key(t) is the token id (for dE) or the position (for a learned position
// table). A counting sort on the device groups the tokens by key, in token order:
//   count: counts[k] = #tokens with key k        (integer atomics: exact, order-free)
//   scan:  offsets = exclusive prefix sum of counts, offsets[K] = total; cursor = offsets
//   place: unsorted[atomicAdd(cursor[k], 1)] = t  (bucket filled in arbitrary order)
//   rank:  sorted[offsets[k] + #{t' in bucket k : t' < t}] = t   (bucket sorted by t)
//   accum: one workgroup per bucket adds its rows in token order into dW
// Ranking costs the sum of squared bucket sizes, which is small for text (a frequent token
// appears a few hundred times in a batch) and still parallel over tokens when it is not.
// scratch (uint): counts[K] | offsets[K + 1] | cursor[K] | unsorted[tokens] | sorted[tokens]
// embedding_backward_accum_f16 reads dout as fp16 (16-bit storage only); dW and the sums stay fp32.
// vkf-variant-only
// vkf-variant: embedding_backward_count STAGE=0
// vkf-variant: embedding_backward_scan STAGE=1
// vkf-variant: embedding_backward_place STAGE=2
// vkf-variant: embedding_backward_rank STAGE=3
// vkf-variant: embedding_backward_accum STAGE=4
// vkf-variant: embedding_backward_accum_f16 STAGE=4 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#ifdef VKF_F16
#extension GL_EXT_shader_16bit_storage : require
#define STORE_T float16_t
#else
#define STORE_T float
#endif
#include "index.glsl"
#include "philox.glsl"
#include "step.glsl"
layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push {
  uint tokens;
  uint d;
  uint keys;      // K: rows of dW (vocab, or max_len)
  uint len;       // > 0: pos = t % len; 0: pos = position[t]
  int pad_id;
  uint vocab;
  uint key_mode;  // 0: key = token id, 1: key = position
  float scale;    // d out / d W (sqrt(d_model) for E, 1 for positions), before dropout
  float p;
  uint tensor_id;
} pc;

#if STAGE == 1
layout(std430, binding = 0) buffer Scratch { uint scratch[]; };
#else
layout(std430, binding = 0) readonly buffer T { int token[]; };      // [tokens]
layout(std430, binding = 1) readonly buffer Pos { int position[]; }; // [tokens] when len == 0
layout(std430, binding = 2) buffer Scratch { uint scratch[]; };
#endif
#if STAGE == 4
layout(std430, binding = 3) readonly buffer DO { STORE_T dout[]; };  // [tokens, d]
layout(std430, binding = 4) buffer DW { float dw[]; };               // [K, d]
layout(std430, binding = 5) readonly buffer Step { StepScalars st; };
#endif

uint counts_at(uint k) { return k; }
uint offsets_at(uint k) { return pc.keys + k; }
uint cursor_at(uint k) { return 2u * pc.keys + 1u + k; }
uint unsorted_at(uint j) { return 3u * pc.keys + 1u + j; }
uint sorted_at(uint j) { return 3u * pc.keys + 1u + pc.tokens + j; }

#if STAGE != 1
// The key of token t, or -1 when t contributes nothing (padding, id or position out of range).
int key_of(uint t) {
  int id = token[t];
  if (id == pc.pad_id || id < 0 || uint(id) >= pc.vocab) return -1;
  int k = id;
  if (pc.key_mode == 1u) k = pc.len > 0u ? int(t % pc.len) : position[t];
  return k >= 0 && uint(k) < pc.keys ? k : -1;
}
#endif

#if STAGE == 1
shared uint part_sum[gl_WorkGroupSize.x];
#endif

void main() {
#if STAGE == 0
  uint t = global_index_1d();
  if (t >= pc.tokens) return;
  int k = key_of(t);
  if (k >= 0) atomicAdd(scratch[counts_at(uint(k))], 1u);
#elif STAGE == 1
  // One workgroup: each invocation scans a contiguous chunk of the keys.
  uint tid = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  uint chunk = (pc.keys + n - 1u) / n;
  uint k0 = min(pc.keys, tid * chunk), k1 = min(pc.keys, k0 + chunk);
  uint local_sum = 0u;
  for (uint k = k0; k < k1; ++k) local_sum += scratch[counts_at(k)];
  part_sum[tid] = local_sum;
  barrier();
  if (tid == 0u) {
    uint run = 0u;
    for (uint i = 0u; i < n; ++i) {
      uint v = part_sum[i];
      part_sum[i] = run;
      run += v;
    }
    scratch[offsets_at(pc.keys)] = run;
  }
  barrier();
  uint run = part_sum[tid];
  for (uint k = k0; k < k1; ++k) {
    scratch[offsets_at(k)] = run;
    scratch[cursor_at(k)] = run;
    run += scratch[counts_at(k)];
  }
#elif STAGE == 2
  uint t = global_index_1d();
  if (t >= pc.tokens) return;
  int k = key_of(t);
  if (k >= 0) scratch[unsorted_at(atomicAdd(scratch[cursor_at(uint(k))], 1u))] = t;
#elif STAGE == 3
  uint t = global_index_1d();
  if (t >= pc.tokens) return;
  int k = key_of(t);
  if (k < 0) return;
  uint b0 = scratch[offsets_at(uint(k))], n = scratch[counts_at(uint(k))];
  uint rank = 0u;
  for (uint j = 0u; j < n; ++j) rank += scratch[unsorted_at(b0 + j)] < t ? 1u : 0u;
  scratch[sorted_at(b0 + rank)] = t;
#elif STAGE == 4
  uint j = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (j >= scratch[offsets_at(pc.keys)]) return;  // uniform: past the last valid token
  uint t = scratch[sorted_at(j)];
  uint k = uint(key_of(t));
  uint b0 = scratch[offsets_at(k)];
  if (j != b0) return;  // only the first slot of each bucket works
  uint b1 = b0 + scratch[counts_at(k)];
  // The forward's mask: elements counted from this batch's place in the step's whole batch.
  uint first = pc.p > 0.0 && pc.len > 0u ? st.dropout_row * pc.len * pc.d : 0u;
  for (uint c = gl_LocalInvocationID.x; c < pc.d; c += gl_WorkGroupSize.x) {
    float acc = 0.0;
    for (uint b = b0; b < b1; ++b) {
      uint i = scratch[sorted_at(b)] * pc.d + c;
      float g = float(dout[i]);
      if (pc.p > 0.0) g *= dropout_scale(pc.p, st.seed, st.step, pc.tensor_id, i + first);
      acc += g;
    }
    dw[k * pc.d + c] += acc * pc.scale;
  }
#endif
}
