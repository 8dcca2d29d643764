#version 450
// Embedding forward: out[t, :] = dropout(E[token[t], :] * scale + PE[pos(t), :]).
// PE is the paper's interleaved sinusoid, computed here (PE[pos, 2i] = sin(pos / 10000^(2i/d)),
// PE[pos, 2i+1] = cos(...)), or a learned [max_len, d] table. pos(t) is t % len for a
// [batch, len] layout, or positions[t]. Padding tokens and ids outside [0, vocab) give zero
// rows, so padding never carries a signal or receives a gradient.
// embedding_forward_f16 stores out as fp16 (16-bit storage only): the tables, positions and all
// arithmetic stay fp32, and each element is rounded once, when it is stored.
// embedding_forward_half_table* read the token table E as fp16 (the model's fp16 weights,
// issue 15); the learned position table and the arithmetic stay fp32.
// vkf-variant: embedding_forward_f16 VKF_F16=1
// vkf-variant: embedding_forward_half_table VKF_F16_TABLE=1
// vkf-variant: embedding_forward_half_table_f16 VKF_F16_TABLE=1 VKF_F16=1
#extension GL_GOOGLE_include_directive : require
#if defined(VKF_F16) || defined(VKF_F16_TABLE)
#extension GL_EXT_shader_16bit_storage : require
#endif
#ifdef VKF_F16
#define STORE_T float16_t
#else
#define STORE_T float
#endif
#ifdef VKF_F16_TABLE
#define TABLE_T float16_t
#else
#define TABLE_T float
#endif
#include "index.glsl"
#include "philox.glsl"
#include "step.glsl"
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer T { int token[]; };     // [tokens]
layout(std430, binding = 1) readonly buffer Pos { int position[]; }; // [tokens] when len == 0
layout(std430, binding = 2) readonly buffer E { TABLE_T table[]; }; // [vocab, d]
layout(std430, binding = 3) readonly buffer PE { float pos_table[]; };  // [max_len, d] learned
layout(std430, binding = 4) writeonly buffer O { STORE_T outv[]; }; // [tokens, d]
layout(std430, binding = 5) readonly buffer Step { StepScalars st; };
layout(push_constant) uniform Push {
  uint tokens;
  uint d;
  uint vocab;
  uint len;       // > 0: pos = t % len; 0: pos = position[t]
  int pad_id;
  uint max_len;   // rows of the learned table
  uint learned;   // 1: positions from pos_table, 0: sinusoid
  float scale;    // sqrt(d_model) in the paper
  float p;        // dropout probability
  uint tensor_id;
} pc;

// log2(10000)
const float k_log2_10000 = 13.287712379549449;

float positional(uint pos, uint c) {
  if (pc.learned != 0u) return pos < pc.max_len ? pos_table[pos * pc.d + c] : 0.0;
  float freq = exp2(-float(c & ~1u) / float(pc.d) * k_log2_10000);
  float angle = float(pos) * freq;
  return (c & 1u) == 0u ? sin(angle) : cos(angle);
}

void main() {
  // Four consecutive elements an invocation: the four words of one Philox block.
  uint block = global_index_1d();
  uint n = pc.tokens * pc.d;
  if (block * 4u >= n) return;
  // The step buffer is bound only when dropout is on. A [batch, len] batch that is a share of
  // the step's whole batch draws the mask of its place there (StepScalars.dropout_row).
  vec4 mask = vec4(1.0);
  if (pc.p > 0.0) {
    uint first = pc.len > 0u ? st.dropout_row * pc.len * pc.d : 0u;
    mask = dropout_run_scales(pc.p, st.seed, st.step, pc.tensor_id, block * 4u + first);
  }
  for (uint k = 0u; k < 4u; ++k) {
    uint i = block * 4u + k;
    if (i >= n) break;
    uint t = i / pc.d, c = i - t * pc.d;
    int id = token[t];
    float v = 0.0;
    if (id != pc.pad_id && id >= 0 && uint(id) < pc.vocab) {
      int pos = pc.len > 0u ? int(t % pc.len) : position[t];
      v = float(table[uint(id) * pc.d + c]) * pc.scale + (pos >= 0 ? positional(uint(pos), c) : 0.0);
      v *= mask[k];
    }
    outv[i] = STORE_T(v);
  }
}
