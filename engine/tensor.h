#pragma once
// A typed view of device memory: buffer range, shape, dtype. Makes no Vulkan calls.
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/memory.h"

namespace vkf {

enum class DType { f32, f16, i32 };

inline uint32_t dtype_bytes(DType t) {
  return t == DType::f16 ? 2 : 4;
}
inline const char* dtype_name(DType t) {
  return t == DType::f32 ? "f32" : t == DType::f16 ? "f16" : "i32";
}
// The storage type a tuning file names: f32 or f16; else Error.
inline DType storage_dtype_of(const std::string& name) {
  if (name == "f32") return DType::f32;
  if (name == "f16") return DType::f16;
  throw Error("dtype '" + name + "' is not f32 or f16");
}

class Tensor {
 public:
  Tensor() = default;
  Tensor(BufferRef buffer, std::vector<int64_t> shape, DType dtype = DType::f32)
      : buffer_(buffer), shape_(std::move(shape)), dtype_(dtype) {
    if (bytes() > buffer_.size)
      throw Error("tensor " + shape_string() + " " + dtype_name(dtype_) + " needs " +
                  std::to_string(bytes()) + " bytes but its buffer has " +
                  std::to_string(buffer_.size));
  }

  const BufferRef& buffer() const { return buffer_; }
  operator const BufferRef&() const { return buffer_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  size_t rank() const { return shape_.size(); }
  DType dtype() const { return dtype_; }
  int64_t numel() const {
    return std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
  }
  uint64_t bytes() const { return static_cast<uint64_t>(numel()) * dtype_bytes(dtype_); }
  std::string shape_string() const {
    std::string s = "[";
    for (size_t i = 0; i < shape_.size(); ++i) s += (i ? ", " : "") + std::to_string(shape_[i]);
    return s + "]";
  }

 private:
  BufferRef buffer_;
  std::vector<int64_t> shape_;
  DType dtype_ = DType::f32;
};

}  // namespace vkf
