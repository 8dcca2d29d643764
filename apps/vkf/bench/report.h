#pragma once
// What `vkf bench` measures and writes, and what `vkf bench compare` reads: the result file's
// data model, its JSON form (schema "vkf-bench/1", described in bench/README.md) and the check
// that a file follows it. Plain data, no Vulkan.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace vkf::bench {

constexpr const char* k_schema = "vkf-bench/1";

// A row's check against the CPU reference: PASS, FAIL, or SKIP (the row did not run: the device
// or the dtype refuses it; `reason` says why).
enum class Check { pass, fail, skip };
const char* check_name(Check c);  // "PASS", "FAIL", "SKIP"
Check parse_check(const std::string& s);

struct Row {
  std::string id;     // stable across devices and runs, the key `compare` joins on
  std::string group;  // peak, matmul, attention, memory, train, decode
  std::string title;  // readable
  Check check = Check::skip;
  std::string reason;                   // SKIP: why; FAIL: what was wrong
  std::string check_detail;             // what was compared, and the worst error over its tolerance
  std::string timer;                    // "timestamps" or "host"
  std::vector<double> times_ms;         // each timed run
  double time_ms = 0;                   // their median
  double rate = 0;                      // in `unit`, from the median time; higher is faster
  std::string unit;                     // GFLOP/s, GB/s, tokens/s
  std::optional<double> peak_fraction;  // rate over the device's measured peak (`peak_basis`)
  std::string peak_basis;               // fp32 FMA, fp16 FMA, tensor cores, copy
};

struct Peak {
  double fp32_gflops = 0;
  std::optional<double> fp16_gflops;  // absent where the device has no shaderFloat16
  // fp16 tensor-core products (peak/fp16_coopmat): absent where the device lists no
  // VK_KHR_cooperative_matrix fp16 shape or the build has no probe kernel
  std::optional<double> coopmat_gflops;
  double copy_gbytes_s = 0;
};

struct DeviceReport {
  std::string label;           // "llvmpipe (LLVM 15.0.6, 256 bits), Mesa 22.3.6"
  nlohmann::json fingerprint;  // see fingerprint.h
  Peak peak;
  std::vector<Row> rows;
  double seconds = 0;  // wall time of the whole suite on this device
  int failed() const;
};

struct Report {
  std::string schema = k_schema;
  std::string vkf_version;
  std::string suite;
  int repeat = 0;
  std::string created;  // UTC, ISO 8601
  nlohmann::json host;  // CPU, OS, the environment that changes results
  std::vector<DeviceReport> devices;
  int failed() const;
};

nlohmann::json to_json(const Row& r);
nlohmann::json to_json(const DeviceReport& d);
nlohmann::json to_json(const Report& r);
// Parse a result file's JSON; throws vkf::Error naming the first field that does not follow
// the schema (`what` prefixes the message, e.g. the file name).
Report report_from_json(const nlohmann::json& j, const std::string& what);
Report read_report(const std::string& path);
void write_report(const Report& r, const std::string& path);

}  // namespace vkf::bench
