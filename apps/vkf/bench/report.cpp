#include "apps/vkf/bench/report.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/error.h"
#include "engine/file_io.h"
#include "engine/json_limits.h"

namespace vkf::bench {
namespace {

using nlohmann::json;

// Reads j[key] as T, or throws naming the field and what was expected.
template <typename T>
T field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw Error(where + ": missing field '" + key + "'");
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw Error(where + ": field '" + key + "' has the wrong type (" + json_excerpt(j.at(key)) +
                ")");
  }
}

// A count (j[key]): a whole number in [lo, hi], read strictly (engine/json_limits.h). json's
// get<int> would take 0.5 as 0 and 2^40 as whatever its low bits are, and an impossible count
// then compares equal to a real one.
int count_field(const json& j, const char* key, const std::string& where, int lo, int hi) {
  return int(json_whole(field<json>(j, key, where), where + ": field '" + key + "'", lo, hi));
}

// No result holds more rows (each is a timed benchmark) or repeats than this.
constexpr int k_max_count = 1000000;

json optional_number(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

std::optional<double> read_optional(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return field<double>(j, key, where);
}

Row row_from_json(const json& j, const std::string& where) {
  Row r;
  r.id = field<std::string>(j, "id", where);
  const std::string at = where + " row '" + r.id + "'";
  r.group = field<std::string>(j, "group", at);
  r.title = field<std::string>(j, "title", at);
  r.check = parse_check(field<std::string>(j, "check", at));
  r.reason = field<std::string>(j, "reason", at);
  r.check_detail = field<std::string>(j, "check_detail", at);
  r.timer = field<std::string>(j, "timer", at);
  r.times_ms = field<std::vector<double>>(j, "times_ms", at);
  r.time_ms = field<double>(j, "time_ms", at);
  r.rate = field<double>(j, "rate", at);
  r.unit = field<std::string>(j, "unit", at);
  r.peak_fraction = read_optional(j, "peak_fraction", at);
  r.peak_basis = field<std::string>(j, "peak_basis", at);
  if (r.check == Check::pass && (r.times_ms.empty() || r.rate <= 0 || r.unit.empty()))
    throw Error(at + ": a PASS row needs times_ms, a positive rate and a unit");
  if (r.check != Check::pass && r.reason.empty())
    throw Error(at + ": a " + check_name(r.check) + " row needs a reason");
  return r;
}

DeviceReport device_from_json(const json& j, const std::string& where) {
  DeviceReport d;
  d.label = field<std::string>(j, "label", where);
  const std::string at = where + " device '" + d.label + "'";
  d.fingerprint = field<json>(j, "fingerprint", at);
  for (const char* key : {"name", "vendor", "driver_name", "driver_version", "api_version"})
    field<json>(d.fingerprint, key, at + " fingerprint");
  const json peak = field<json>(j, "peak", at);
  d.peak.fp32_gflops = field<double>(peak, "fp32_fma_gflops", at + " peak");
  d.peak.fp16_gflops = read_optional(peak, "fp16_fma_gflops", at + " peak");
  d.peak.coopmat_gflops = read_optional(peak, "coopmat_gflops", at + " peak");
  d.peak.copy_gbytes_s = field<double>(peak, "copy_gbytes_s", at + " peak");
  d.seconds = field<double>(j, "seconds", at);
  const json rows = field<json>(j, "rows", at);
  if (!rows.is_array()) throw Error(at + ": 'rows' is not an array");
  for (const json& r : rows) d.rows.push_back(row_from_json(r, at));
  if (count_field(j, "failed", at, 0, k_max_count) != d.failed())
    throw Error(at + ": 'failed' does not count the FAIL rows");
  return d;
}

}  // namespace

const char* check_name(Check c) {
  return c == Check::pass ? "PASS" : c == Check::fail ? "FAIL" : "SKIP";
}

Check parse_check(const std::string& s) {
  for (Check c : {Check::pass, Check::fail, Check::skip})
    if (s == check_name(c)) return c;
  throw Error("check '" + s + "' is none of PASS, FAIL, SKIP");
}

int DeviceReport::failed() const {
  int n = 0;
  for (const Row& r : rows) n += r.check == Check::fail;
  return n;
}

int Report::failed() const {
  int n = 0;
  for (const DeviceReport& d : devices) n += d.failed();
  return n;
}

json to_json(const Row& r) {
  return {{"id", r.id},
          {"group", r.group},
          {"title", r.title},
          {"check", check_name(r.check)},
          {"reason", r.reason},
          {"check_detail", r.check_detail},
          {"timer", r.timer},
          {"times_ms", r.times_ms},
          {"time_ms", r.time_ms},
          {"rate", r.rate},
          {"unit", r.unit},
          {"peak_fraction", optional_number(r.peak_fraction)},
          {"peak_basis", r.peak_basis}};
}

json to_json(const DeviceReport& d) {
  json rows = json::array();
  for (const Row& r : d.rows) rows.push_back(to_json(r));
  return {{"label", d.label},
          {"fingerprint", d.fingerprint},
          {"peak",
           {{"fp32_fma_gflops", d.peak.fp32_gflops},
            {"fp16_fma_gflops", optional_number(d.peak.fp16_gflops)},
            {"coopmat_gflops", optional_number(d.peak.coopmat_gflops)},
            {"copy_gbytes_s", d.peak.copy_gbytes_s}}},
          {"seconds", d.seconds},
          {"failed", d.failed()},
          {"rows", rows}};
}

json to_json(const Report& r) {
  json devices = json::array();
  for (const DeviceReport& d : r.devices) devices.push_back(to_json(d));
  return {{"schema", r.schema},   {"vkf_version", r.vkf_version},
          {"suite", r.suite},     {"repeat", r.repeat},
          {"created", r.created}, {"host", r.host},
          {"failed", r.failed()}, {"devices", devices}};
}

Report report_from_json(const json& j, const std::string& what) {
  if (!j.is_object()) throw Error(what + ": not a vkf bench result (not a JSON object)");
  Report r;
  r.schema = field<std::string>(j, "schema", what);
  if (r.schema != k_schema)
    throw Error(what + ": schema '" + r.schema + "', this vkf reads '" + k_schema + "'");
  r.vkf_version = field<std::string>(j, "vkf_version", what);
  r.suite = field<std::string>(j, "suite", what);
  r.repeat = count_field(j, "repeat", what, 1, k_max_count);
  r.created = field<std::string>(j, "created", what);
  r.host = field<json>(j, "host", what);
  // Read by compare as {"cpu": "..."}; anything else would throw there, naming no file.
  if (!r.host.is_object()) throw Error(what + ": field 'host' is not an object");
  if (r.host.contains("cpu") && !r.host.at("cpu").is_string())
    throw Error(what + ": field 'host.cpu' is not a string");
  const json devices = field<json>(j, "devices", what);
  if (!devices.is_array() || devices.empty())
    throw Error(what + ": 'devices' is not a non-empty array");
  for (const json& d : devices) r.devices.push_back(device_from_json(d, what));
  if (count_field(j, "failed", what, 0, k_max_count) != r.failed())
    throw Error(what + ": 'failed' does not count the FAIL rows");
  return r;
}

Report read_report(const std::string& path) {
  const json j = parse_json(read_whole_file(path, k_max_text_file_bytes), path);
  return report_from_json(j, path);
}

void write_report(const Report& r, const std::string& path) {
  write_file_atomically(path, to_json(r).dump(2) + "\n");
}

}  // namespace vkf::bench
