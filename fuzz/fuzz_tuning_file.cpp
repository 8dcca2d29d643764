// libFuzzer entry for vkf::fuzz::tuning_file (fuzz/targets.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vkf::fuzz::tuning_file(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
