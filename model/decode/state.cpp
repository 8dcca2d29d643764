#include "model/decode/state.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "engine/error.h"

namespace vkf::model::decode {

bool DecodeShape::operator<(const DecodeShape& o) const {
  return std::tie(batch, beam, src_len, max_out, candidates) <
         std::tie(o.batch, o.beam, o.src_len, o.max_out, o.candidates);
}

DecodeState::DecodeState(Device& dev, const ModelConfig& config, const DecodeShape& shape,
                         DType dtype)
    : config_(config), shape_(shape), dtype_(dtype), named_(dev) {
  // The row copies of the caches (beam reordering, appending a position) move 32-bit words:
  // f16 rows must be whole words.
  if (dtype == DType::f16 && ((config.heads * config.head_dim_k()) % 2 != 0 ||
                              (config.heads * config.head_dim_v()) % 2 != 0))
    throw Error(
        "decode: fp16 needs an even number of key and value columns (heads x head "
        "size), not " +
        std::to_string(config.heads * config.head_dim_k()) + " and " +
        std::to_string(config.heads * config.head_dim_v()) + "; use fp32");
  if (shape.batch == 0 || shape.beam == 0 || shape.src_len == 0 || shape.max_out == 0)
    throw Error("decode: empty shape");
  if (int(shape.src_len) > config.max_len || int(shape.max_out) > config.max_len)
    throw Error("decode: length " + std::to_string(std::max(shape.src_len, shape.max_out)) +
                " exceeds the model's max_len " + std::to_string(config.max_len));
  if (shape.candidates == 0 || int(shape.candidates) > config.vocab_size)
    throw Error("decode: candidates per row must be in 1.." + std::to_string(config.vocab_size));
}

BufferRef DecodeState::cross_k(int l) {
  return cache("cross." + std::to_string(l) + ".k",
               uint64_t{shape_.batch} * shape_.src_len * config_.heads * config_.head_dim_k());
}

BufferRef DecodeState::cross_v(int l) {
  return cache("cross." + std::to_string(l) + ".v",
               uint64_t{shape_.batch} * shape_.src_len * config_.heads * config_.head_dim_v());
}

BufferRef DecodeState::cache_k(int copy, int l) {
  return cache("cache." + std::to_string(copy) + "." + std::to_string(l) + ".k",
               uint64_t{shape_.rows()} * shape_.max_out * config_.heads * config_.head_dim_k());
}

BufferRef DecodeState::cache_v(int copy, int l) {
  return cache("cache." + std::to_string(copy) + "." + std::to_string(l) + ".v",
               uint64_t{shape_.rows()} * shape_.max_out * config_.heads * config_.head_dim_v());
}

BufferRef DecodeState::split_k() {
  const uint32_t d = uint32_t(config_.d_model), H = uint32_t(config_.heads),
                 dk = uint32_t(config_.head_dim_k()), dv = uint32_t(config_.head_dim_v()),
                 ff = uint32_t(config_.d_ff), V = uint32_t(config_.vocab_size);
  // (in, out) of the Linears both passes run: the attention projections and the feed-forward.
  const std::pair<uint32_t, uint32_t> linears[] = {
      {d, H * dk}, {d, H * dv}, {H * dv, d}, {d, ff}, {ff, d}};
  uint64_t bytes = 0;
  for (uint32_t rows : {shape_.batch * shape_.src_len, shape_.rows()})
    for (auto [in, out] : linears)
      bytes =
          std::max(bytes, linear_forward_workspace_bytes(named_.device(), in, out, rows, dtype_));
  // The step's output projection onto the vocabulary (a Linear's shape without the bias).
  bytes =
      std::max(bytes, linear_forward_workspace_bytes(named_.device(), d, V, shape_.rows(), dtype_));
  return bytes > 0 ? named_.write("split_k", k_split_k_parts * bytes / 4) : BufferRef{};
}

BufferRef DecodeState::cache(const std::string& name, uint64_t elements) {
  return named_.write(name, dtype_ == DType::f16 ? (elements + 1) / 2 : elements);
}

}  // namespace vkf::model::decode
