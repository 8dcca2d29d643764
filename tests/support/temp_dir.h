#pragma once
// Scratch directories for tests, one per name and test process.
#include <filesystem>
#include <string>

namespace vkf::test {

// A fresh, empty directory under the system temp dir, unique to this process.
std::filesystem::path temp_dir(const std::string& name);

}  // namespace vkf::test
