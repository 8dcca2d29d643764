#pragma once
// The numeric precision a model runs in on a device (issue 15): fp32, or fp16 storage of the
// weights the matmuls read and of every activation, with fp32 arithmetic and accumulation in
// every kernel (the ops' f16 variants) and fp32 LayerNorm statistics, softmax and loss. `auto`
// takes fp16 on a GPU with 16-bit storage buffers and fp32 on CPU devices, where fp16 storage
// saves memory but no time (lavapipe converts every element it loads).
#include <string>

#include "engine/device_info.h"
#include "engine/tensor.h"

namespace vkf::model {

enum class Precision { fp32, fp16 };
// What a user asks for: a precision, or the device's choice.
enum class PrecisionChoice { fp32, fp16, automatic };

const char* precision_name(Precision p);  // "fp32", "fp16"
// "fp32", "fp16" or "auto"; anything else is a vkf::Error naming the accepted words.
PrecisionChoice parse_precision(const std::string& word);
// The precision `choice` takes on `info`; fp16 on a device without 16-bit storage buffers is
// a vkf::Error that names the device and says to use fp32.
Precision resolve_precision(PrecisionChoice choice, const DeviceInfo& info);
// The storage type of the activations (and of the matmul weights) in precision p.
inline DType activation_dtype(Precision p) {
  return p == Precision::fp16 ? DType::f16 : DType::f32;
}

}  // namespace vkf::model
