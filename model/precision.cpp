#include "model/precision.h"

#include "engine/error.h"

namespace vkf::model {

const char* precision_name(Precision p) {
  return p == Precision::fp16 ? "fp16" : "fp32";
}

PrecisionChoice parse_precision(const std::string& word) {
  if (word == "fp32") return PrecisionChoice::fp32;
  if (word == "fp16") return PrecisionChoice::fp16;
  if (word == "auto") return PrecisionChoice::automatic;
  throw Error("precision '" + word + "' is not one of fp32, fp16, auto");
}

Precision resolve_precision(PrecisionChoice choice, const DeviceInfo& info) {
  switch (choice) {
    case PrecisionChoice::fp32:
      return Precision::fp32;
    case PrecisionChoice::fp16:
      if (!info.storage16)
        throw Error(
            "--precision fp16 needs 16-bit storage buffers (storageBuffer16BitAccess), "
            "which " +
            info.name + " does not have; use --precision fp32 or auto");
      return Precision::fp16;
    case PrecisionChoice::automatic:
      // fp16 weights start at multiples of 128 bytes (model/device_weights.h): a device that
      // binds storage buffers at coarser offsets stays in fp32 rather than refusing.
      return info.storage16 && !info.is_cpu() && info.min_storage_offset_alignment <= 128
                 ? Precision::fp16
                 : Precision::fp32;
  }
  return Precision::fp32;
}

}  // namespace vkf::model
