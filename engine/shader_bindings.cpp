#include "engine/shader_bindings.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "engine/shader_registry.h"

namespace vkf {
namespace {

// SPIR-V opcodes, decorations and storage classes (the SPIR-V specification, section 3).
constexpr uint32_t k_magic = 0x07230203;
constexpr uint32_t k_op_type_pointer = 32, k_op_variable = 59, k_op_decorate = 71;
constexpr uint32_t k_decoration_buffer_block = 3, k_decoration_binding = 33,
                   k_decoration_descriptor_set = 34;
constexpr uint32_t k_class_uniform = 2, k_class_storage_buffer = 12;

}  // namespace

uint32_t spirv_storage_buffers(std::span<const uint32_t> spirv) {
  if (spirv.size() < 5 || spirv[0] != k_magic) return 0;
  std::map<uint32_t, uint32_t> binding, set;                   // by variable id
  std::set<uint32_t> buffer_blocks;                            // struct type ids
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> pointers;  // id -> (class, pointee)
  std::vector<std::pair<uint32_t, uint32_t>> variables;        // (pointer type, id)
  for (size_t i = 5; i < spirv.size();) {
    const uint32_t words = spirv[i] >> 16, op = spirv[i] & 0xffff;
    if (words == 0 || i + words > spirv.size()) break;  // malformed: count what was read
    const uint32_t* w = &spirv[i];
    if (op == k_op_decorate && words >= 3) {
      if (w[2] == k_decoration_binding && words >= 4) binding[w[1]] = w[3];
      if (w[2] == k_decoration_descriptor_set && words >= 4) set[w[1]] = w[3];
      if (w[2] == k_decoration_buffer_block) buffer_blocks.insert(w[1]);
    } else if (op == k_op_type_pointer && words >= 4) {
      pointers[w[1]] = {w[2], w[3]};
    } else if (op == k_op_variable && words >= 4) {
      variables.emplace_back(w[1], w[2]);
    }
    i += words;
  }
  std::set<std::pair<uint32_t, uint32_t>> bound;
  for (const auto& [type, id] : variables) {
    const auto p = pointers.find(type);
    if (p == pointers.end() || !binding.count(id)) continue;
    const auto [cls, pointee] = p->second;
    if (cls == k_class_storage_buffer || (cls == k_class_uniform && buffer_blocks.count(pointee)))
      bound.insert({set.count(id) ? set[id] : 0, binding[id]});
  }
  return uint32_t(bound.size());
}

std::vector<WideKernel> kernels_over_storage_limit(uint32_t limit) {
  std::vector<WideKernel> out;
  for (std::string_view name : shaders::names()) {
    const uint32_t n = spirv_storage_buffers(shaders::find(name));
    if (n <= limit) continue;
    std::string twin(name);
    const bool f16 = twin.ends_with("_f16");
    twin.insert(f16 ? twin.size() - 4 : twin.size(), "_texel");
    const std::span<const uint32_t> twin_spirv = shaders::find(twin);
    if (twin_spirv.empty() || spirv_storage_buffers(twin_spirv) > limit) twin.clear();
    out.push_back({std::string(name), n, twin});
  }
  std::stable_sort(out.begin(), out.end(), [](const WideKernel& a, const WideKernel& b) {
    return a.storage_buffers > b.storage_buffers;
  });
  return out;
}

}  // namespace vkf
