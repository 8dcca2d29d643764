#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/train/progress.h"
#include "model/train/schedule.h"
#include "tests/support/vk_test.h"

using namespace vkf::model;

TEST_CASE("the learning-rate schedule is the paper's", "[model][schedule]") {
  Schedule s{512, 4000, 1.0};
  // Linear warm-up to the peak at step 4000, then inverse square root.
  CHECK(s.lr(1) == Approx(std::pow(512.0, -0.5) * std::pow(4000.0, -1.5)));
  CHECK(s.lr(4000) == Approx(std::pow(512.0, -0.5) / std::sqrt(4000.0)));
  CHECK(s.lr(2000) == Approx(s.lr(4000) / 2));
  CHECK(s.lr(16000) == Approx(s.lr(4000) / 2));
  CHECK(s.lr(4000) > s.lr(3999));
  CHECK(s.lr(4000) > s.lr(4001));
  CHECK(s.lr(0) == s.lr(1));
}

TEST_CASE("progress lines and durations read well", "[model][progress]") {
  CHECK(format_duration(42) == "42s");
  CHECK(format_duration(185) == "3m05s");
  CHECK(format_duration(3720) == "1h02m");
  CHECK(format_duration(-1) == "?");
  StepMetrics m{120, 2, 3.5, 3.0, 1e-4, 5000, 65, 130.0};
  std::string line = progress_line(m);
  CHECK_THAT(line, Catch::Contains("step    120") && Catch::Contains("ppl") &&
                       Catch::Contains("20.09") && Catch::Contains("eta 2m10s"));
  CHECK(to_json(m)["tokens_per_second"] == 5000.0);
  CHECK(*estimate_eta(10, 0.25) == Approx(30));
  CHECK_FALSE(estimate_eta(10, 0).has_value());
}

TEST_CASE("the JSONL log appends one record a line", "[model][progress]") {
  auto path =
      std::filesystem::temp_directory_path() / ("vkf-log-" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(path);
  {
    JsonlLog log(path.string());
    log.write({{"step", 1}});
    log.write({{"step", 2}});
  }
  std::ifstream in(path);
  std::string a, b;
  std::getline(in, a);
  std::getline(in, b);
  CHECK(nlohmann::json::parse(a)["step"] == 1);
  CHECK(nlohmann::json::parse(b)["step"] == 2);
  std::filesystem::remove(path);
  REQUIRE_THROWS_AS(JsonlLog("/nonexistent-dir/x.jsonl"), vkf::Error);
}
