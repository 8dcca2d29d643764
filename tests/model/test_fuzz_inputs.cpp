// The fuzz targets (fuzz/targets.h) over their committed seeds and every regression input kept
// from a fuzzing run, in the ordinary test suite: a reader that crashes or breaks an invariant on
// one of them aborts this program.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz/targets.h"

namespace fs = std::filesystem;

TEST_CASE("fuzz seeds and regressions pass through every reader", "[model][fuzz]") {
  const fs::path root = fs::path(VKF_SOURCE_DIR) / "fuzz";
  size_t inputs = 0;
  for (const auto& target : vkf::fuzz::all_targets()) {
    size_t seeds = 0;
    for (const char* kind : {"corpus", "regressions"}) {
      const fs::path dir = root / kind / target.name;
      if (!fs::is_directory(dir)) continue;
      for (const auto& entry : fs::directory_iterator(dir)) {
        if (!entry.is_regular_file() || entry.path().filename().string().starts_with(".")) continue;
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream bytes;
        bytes << in.rdbuf();
        INFO(entry.path().string());
        target.run(bytes.str());
        seeds += std::string(kind) == "corpus";
        ++inputs;
      }
    }
    INFO(target.name);
    CHECK(seeds > 0);  // every target has committed seeds
  }
  CHECK(inputs >= 5);
}
