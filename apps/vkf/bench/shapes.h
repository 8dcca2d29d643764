#pragma once
// The shapes vkformer is benchmarked at, in one place for the Google Benchmark programs in
// bench/ and for `vkf bench`: the Transformer-base model's matmuls, attention, normalisation,
// loss and optimizer sizes, and the training and decoding batches. `suite` says from which
// `vkf bench --suite` on a shape runs (quick < standard < full).
#include <cstdint>
#include <span>
#include <string>

namespace vkf::bench {

enum class Suite { quick = 0, standard = 1, full = 2 };
const char* suite_name(Suite s);
Suite parse_suite(const std::string& name);  // throws vkf::Error on anything else

// 0 = A B, 1 = A B^T (a Linear's forward, y = x W^T), 2 = A^T B (its weight gradient).
enum class MatmulForm : int { ab = 0, abt = 1, atb = 2 };
const char* form_name(MatmulForm f);  // "A B", "A B^T", "A^T B"

struct MatmulShape {
  uint32_t m, n, k;
  MatmulForm form;
  const char* role;  // where the model runs it
  Suite suite;
};

// bench_matmul's rows and `vkf bench`'s matmul rows: 1024^3 and, at batches of 4096 and 25000
// tokens, the attention projections x[T,512] W[512,512]^T, FFN fc1 x[T,512] W1[2048,512]^T and
// fc2 h[T,2048] W2[512,2048]^T, the vocabulary projection x[T,512] E[37000,512]^T, and fc1's
// backward at 4096 tokens: dx = dh[T,2048] W1 (A B) and dW1 = dh^T x (A^T B). 1024 x 1024 x
// 1040 A B^T: rows 4160 bytes apart instead of 4096 (on lavapipe the rows a workgroup reads at
// once alias in the CPU's L1 when their stride is a multiple of 4 KiB).
std::span<const MatmulShape> matmul_shapes();

// f16 rows by default up to 2^32 m n k (1024^3 and the 4096-token shapes but the vocabulary
// projection): lavapipe takes seconds a call beyond.
bool f16_by_default(const MatmulShape& s);

// Fused attention at Transformer-base heads: 8 heads of 64.
constexpr uint32_t k_attention_heads = 8, k_attention_head_dim = 64;
struct AttentionShape {
  uint32_t batch, len;
  bool causal;   // the decoder's self-attention
  bool dropout;  // p = 0.1 on the weights
  Suite suite;
};
// batch 64 x len 64 (4096 tokens; causal with dropout as the decoder trains), 16 x 256, and
// 392 x 64 (25,088 tokens, the paper's 25,000-token batch).
std::span<const AttentionShape> attention_shapes();

// LayerNorm, cross-entropy, Adam.
constexpr uint32_t k_d_model = 512;
constexpr uint32_t k_vocab_base = 37000;  // the paper's shared BPE vocabulary
constexpr uint32_t k_tokens = 4096, k_tokens_large = 25000;
constexpr uint32_t k_adam_params_small = 4u << 20;     // VKF_BENCH_SMALL, quick suite
constexpr uint32_t k_adam_params_large = 60'000'000u;  // Transformer-big scale

// Whole steps: sentences of 32 tokens a side, vocabulary 8000 (the sample's), 4096 tokens a
// side, 1024 for base and big on CPU devices (whose steps take seconds there) and in the quick
// suite.
constexpr uint32_t k_train_len = 32, k_train_vocab = 8000;
uint32_t train_tokens(const std::string& preset, bool cpu_device, Suite suite = Suite::full);

// One decoder step of beam search: beam 4 x 32 sentences, sources of 20 tokens + EOS, up to 20
// output positions (bench_translate decodes whole sentences at this shape).
constexpr uint32_t k_decode_beam = 4, k_decode_batch = 32, k_decode_src_len = 21,
                   k_decode_positions = 20;

}  // namespace vkf::bench
