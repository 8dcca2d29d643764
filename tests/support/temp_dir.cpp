#include "tests/support/temp_dir.h"

#include <unistd.h>

namespace vkf::test {

std::filesystem::path temp_dir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path d = fs::temp_directory_path() / ("vkf-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace vkf::test
