#pragma once
// SPIR-V of every shader in shaders/, embedded at build time (see cmake/shaders.cmake).
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace vkf::shaders {
// Empty span when no shader of that name was built.
std::span<const uint32_t> find(std::string_view name);
std::vector<std::string_view> names();
}  // namespace vkf::shaders
