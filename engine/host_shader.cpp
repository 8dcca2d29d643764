#include "engine/host_shader.h"

#include <map>
#include <vector>

namespace vkf {
namespace {

// SPIR-V 1.x numbers (the unified specification, sections 3.x).
constexpr uint32_t k_magic = 0x07230203;
constexpr uint32_t k_op_entry_point = 15, k_op_type_image = 25, k_op_type_sampled_image = 27;
constexpr uint32_t k_op_type_pointer = 32, k_op_variable = 59, k_op_decorate = 71;
constexpr uint32_t k_model_gl_compute = 5;
constexpr uint32_t k_decoration_binding = 33, k_decoration_set = 34;
constexpr uint32_t k_storage_push_constant = 9;
constexpr uint32_t k_dim_buffer = 5;

struct Instruction {
  uint32_t opcode = 0;
  std::span<const uint32_t> operands;
};

// The instructions after the 5-word header; empty when a word count runs past the end.
std::vector<Instruction> instructions(std::span<const uint32_t> words, bool& ok) {
  std::vector<Instruction> out;
  ok = true;
  for (size_t i = 5; i < words.size();) {
    const uint32_t count = words[i] >> 16;
    if (count == 0 || i + count > words.size()) {
      ok = false;
      return {};
    }
    out.push_back({words[i] & 0xffffu, words.subspan(i + 1, count - 1)});
    i += count;
  }
  return out;
}

std::string literal_string(std::span<const uint32_t> words) {
  std::string s;
  for (uint32_t w : words)
    for (int b = 0; b < 4; ++b) {
      const char c = char((w >> (8 * b)) & 0xffu);
      if (c == '\0') return s;
      s += c;
    }
  return s;
}

}  // namespace

std::string spirv_module_misfit(std::span<const uint32_t> spirv) {
  if (spirv.size() < 5 || spirv[0] != k_magic)
    return "not SPIR-V (no magic number 0x07230203 in the first word)";
  bool ok = false;
  const auto code = instructions(spirv, ok);
  if (!ok) return "truncated SPIR-V (an instruction runs past the end)";
  for (const Instruction& in : code)
    if (in.opcode == k_op_entry_point && in.operands.size() >= 3 &&
        in.operands[0] == k_model_gl_compute && literal_string(in.operands.subspan(2)) == "main")
      return "";
  return "no compute (GLCompute) entry point named \"main\"";
}

std::string spirv_layout_misfit(std::span<const uint32_t> spirv, uint32_t buffers,
                                uint32_t texel_buffers, uint32_t push_bytes) {
  if (std::string why = spirv_module_misfit(spirv); !why.empty()) return why;
  bool ok = false;
  const auto code = instructions(spirv, ok);
  std::map<uint32_t, Instruction> types;  // result id -> type declaration
  std::map<uint32_t, uint32_t> set, binding;
  std::vector<Instruction> variables;
  for (const Instruction& in : code) {
    if ((in.opcode == k_op_type_image || in.opcode == k_op_type_sampled_image ||
         in.opcode == k_op_type_pointer) &&
        !in.operands.empty())
      types[in.operands[0]] = in;
    if (in.opcode == k_op_decorate && in.operands.size() >= 3) {
      if (in.operands[1] == k_decoration_set) set[in.operands[0]] = in.operands[2];
      if (in.operands[1] == k_decoration_binding) binding[in.operands[0]] = in.operands[2];
    }
    if (in.opcode == k_op_variable && in.operands.size() >= 3) variables.push_back(in);
  }
  // Whether the pointer type `id` points (through a sampled image) at an image of Dim Buffer.
  auto is_texel_buffer = [&](uint32_t pointer) {
    auto p = types.find(pointer);
    if (p == types.end() || p->second.opcode != k_op_type_pointer || p->second.operands.size() < 3)
      return false;
    auto t = types.find(p->second.operands[2]);
    if (t != types.end() && t->second.opcode == k_op_type_sampled_image &&
        t->second.operands.size() >= 2)
      t = types.find(t->second.operands[1]);
    return t != types.end() && t->second.opcode == k_op_type_image &&
           t->second.operands.size() >= 3 && t->second.operands[2] == k_dim_buffer;
  };
  for (const Instruction& v : variables) {
    const uint32_t id = v.operands[1], storage = v.operands[2];
    if (storage == k_storage_push_constant && push_bytes == 0)
      return "it declares push constants but the kernel spec has push_bytes 0";
    auto b = binding.find(id);
    if (b == binding.end()) continue;
    const uint32_t s = set.count(id) ? set.at(id) : 0;
    const std::string where = "set " + std::to_string(s) + ", binding " + std::to_string(b->second);
    if (s != 0) return where + ": the engine binds descriptor set 0 only";
    if (b->second >= buffers)
      return where + " is beyond the spec's " + std::to_string(buffers) + " buffers";
    const bool texel = is_texel_buffer(v.operands[0]);
    if (texel != bool((texel_buffers >> b->second) & 1u))
      return where + (texel ? " is a texel buffer, not in the spec's texel_buffers"
                            : " is a storage buffer, but the spec's texel_buffers names it");
  }
  return "";
}

}  // namespace vkf
