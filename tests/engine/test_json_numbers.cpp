// Numbers in the JSON files vkf reads (engine/json_limits.h): whole where a count is meant, in
// the range of the field they fill, and finite; each refusal names the field. A tuning file
// with "rows": 1e300 once reached nlohmann's get<uint32_t>(), which is undefined behaviour.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "engine/error.h"
#include "engine/json_limits.h"
#include "engine/tuning_file.h"

using Catch::Contains;
using nlohmann::json;

TEST_CASE("JSON numbers are read strictly and refused by name", "[engine][json]") {
  CHECK(vkf::json_number<uint32_t>(json(4294967295u), "n") == 4294967295u);
  CHECK(vkf::json_number<int>(json(-7), "n") == -7);
  CHECK(vkf::json_number<float>(json(0.5), "p") == 0.5f);
  CHECK(vkf::json_number<double>(json(3), "s") == 3.0);

  const std::pair<json, const char*> refused_u32[] = {
      {json::parse("1e300"), "rows must be a whole number, got 1e+300"},
      {json(64.5), "rows must be a whole number, got 64.5"},
      {json(-1), "rows must be a whole number in [0, 4294967295], got -1"},
      {json(uint64_t(1) << 32), "rows must be a whole number in [0, 4294967295], got 4294967296"},
      {json(UINT64_MAX), "in [0, 4294967295]"},
      {json("12"), "rows must be a whole number, got \"12\""},
      {json(true), "rows must be a whole number, got true"},
      {json(nullptr), "rows must be a whole number, got null"},
  };
  for (const auto& [v, message] : refused_u32) {
    INFO(v.dump());
    CHECK_THROWS_WITH(vkf::json_number<uint32_t>(v, "rows"), Contains(message));
  }
  CHECK_THROWS_WITH(vkf::json_number<int>(json(int64_t(INT32_MIN) - 1), "d"),
                    Contains("in [-2147483648, 2147483647]"));
  CHECK_THROWS_WITH(vkf::json_number<int64_t>(json(UINT64_MAX), "d"),
                    Contains("in [-9223372036854775808, 9223372036854775807]"));
  // float cannot hold 1e300; double can.
  CHECK_THROWS_WITH(vkf::json_number<float>(json::parse("1e300"), "dropout"),
                    Contains("dropout must be a number in"));
  CHECK(vkf::json_number<double>(json::parse("1e300"), "s") == 1e300);
  CHECK_THROWS_WITH(vkf::json_number<double>(json("x"), "s"),
                    Contains("s must be a finite number"));

  const json obj = {{"n", 5}};
  CHECK(vkf::json_field<uint32_t>(obj, "n") == 5);
  CHECK(vkf::json_field<uint32_t>(obj, "m", 9u) == 9);
  CHECK_THROWS(vkf::json_field<uint32_t>(obj, "m"));
}

TEST_CASE("a tuning file with an impossible number is malformed, naming the field",
          "[engine][json]") {
  const std::filesystem::path seed =
      std::filesystem::path(VKF_SOURCE_DIR) / "fuzz/regressions/tuning_file";
  for (const auto& [file, field] : {std::pair{"rows_1e300.json", "rows must be a whole number"},
                                    {"negative_workgroup.json", "workgroup must be a whole"}}) {
    INFO(file);
    CHECK_THROWS_WITH(vkf::read_tuning_file((seed / file).string()),
                      Contains("is malformed") && Contains(field));
  }
}
