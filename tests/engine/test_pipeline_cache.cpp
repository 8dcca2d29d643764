#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/ops/basic.h"
#include "tests/support/vk_test.h"

using namespace vkf;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("vkf-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

float run_fill(Device& dev) {
  Buffer b = dev.allocate(64, "b");
  Recorder rec(dev);
  ops::fill(dev, rec, b, 16, 3.0f);
  rec.finish().run();
  return dev.download<float>(b, 16)[15];
}
}  // namespace

VKF_TEST_CASE("the pipeline cache is saved and reused", "[engine][cache]") {
  fs::path dir = fresh_dir("cache");
  std::string path;
  {
    auto dev = test::new_device({.pipeline_cache_dir = dir.string()});
    CHECK_FALSE(dev->pipeline_cache().loaded_from_disk());
    CHECK(run_fill(*dev) == 3.0f);
    path = dev->pipeline_cache().path();
  }
  REQUIRE(fs::exists(path));
  CHECK(fs::file_size(path) > 0);
  {
    auto dev = test::new_device({.pipeline_cache_dir = dir.string()});
    CHECK(dev->pipeline_cache().loaded_from_disk());
    CHECK(run_fill(*dev) == 3.0f);
  }
  fs::remove_all(dir);
}

VKF_TEST_CASE("a corrupt pipeline cache is ignored and rebuilt", "[engine][cache]") {
  fs::path dir = fresh_dir("corrupt");
  std::string path;
  {
    auto dev = test::new_device({.pipeline_cache_dir = dir.string()});
    run_fill(*dev);
    path = dev->pipeline_cache().path();
  }
  for (int mode = 0; mode < 3; ++mode) {
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      if (mode == 0) {  // flip a byte in the driver's data
        f.seekp(40);
        f.put('\xAB');
      } else if (mode == 1) {  // garbage
        f.seekp(0);
        f.write("not a cache at all", 18);
      }
    }
    if (mode == 2) fs::resize_file(path, 20);  // truncated
    auto dev = test::new_device({.pipeline_cache_dir = dir.string()});
    CHECK_FALSE(dev->pipeline_cache().loaded_from_disk());
    CHECK(run_fill(*dev) == 3.0f);
  }
  {  // and the rewritten cache is good again
    auto dev = test::new_device({.pipeline_cache_dir = dir.string()});
    CHECK(dev->pipeline_cache().loaded_from_disk());
  }
  fs::remove_all(dir);
}

VKF_TEST_CASE("each pipeline compile is reported before it starts and with its time",
              "[engine][cache]") {
  std::vector<std::pair<std::string, double>> events;
  DeviceOptions o;
  o.on_pipeline_compile = [&](const KernelSpec& spec, double seconds) {
    events.emplace_back(describe(spec), seconds);
  };
  auto dev = test::new_device(o);
  CHECK(run_fill(*dev) == 3.0f);
  REQUIRE(events.size() == 2);
  CHECK(events[0].first.rfind("fill [", 0) == 0);
  CHECK(events[0].first == events[1].first);
  CHECK(events[0].second < 0.0);
  CHECK(events[1].second >= 0.0);
  CHECK(run_fill(*dev) == 3.0f);  // the same pipeline again: found in memory, not reported
  CHECK(events.size() == 2);
}
