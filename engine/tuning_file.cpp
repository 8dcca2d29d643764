#include "engine/tuning_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"
#include "engine/kernel.h"

namespace vkf {
namespace {

using nlohmann::json;
constexpr const char* k_format = "vkformer-tuning/1";

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}

DType parse_dtype(const std::string& s) {
  if (s == "f32") return DType::f32;
  if (s == "f16") return DType::f16;
  throw Error("dtype '" + s + "' is not f32 or f16");
}

json config_json(const ops::MatmulConfig& c) {
  json j = {{"name", c.name},       {"workgroup", c.workgroup},
            {"bm", c.bm},           {"bn", c.bn},
            {"bk", c.bk},           {"tm", c.tm},
            {"tn", c.tn},           {"shared", c.shared},
            {"coopmat", c.coopmat}, {"khr", c.khr},
            {"texel", nullptr}};
  if (c.texel) j["texel"] = *c.texel;
  return j;
}

ops::MatmulConfig config_of(const json& j) {
  ops::MatmulConfig c;
  c.name = j.at("name").get<std::string>();
  c.workgroup = j.at("workgroup").get<uint32_t>();
  c.bm = j.at("bm").get<uint32_t>();
  c.bn = j.at("bn").get<uint32_t>();
  c.bk = j.at("bk").get<uint32_t>();
  c.tm = j.at("tm").get<uint32_t>();
  c.tn = j.at("tn").get<uint32_t>();
  c.shared = j.at("shared").get<bool>();
  c.coopmat = j.at("coopmat").get<bool>();
  c.khr = j.at("khr").get<bool>();
  if (!j.at("texel").is_null()) c.texel = j.at("texel").get<bool>();
  // Values the kernel divides by or sizes arrays with: a hand-edited zero must not reach it.
  if (!c.workgroup || !c.bm || !c.bn || !c.bk || !c.tm || !c.tn || c.bm % c.tm || c.bn % c.tn)
    throw Error("configuration '" + c.name +
                "' has a zero size or a tile not a multiple of its "
                "block");
  return c;
}

}  // namespace

TuningKey TuningKey::of(const DeviceInfo& info) {
  return {
      info.vendor_id,      info.device_id,
      info.driver_version, hex(info.pipeline_cache_uuid.data(), info.pipeline_cache_uuid.size()),
      info.name,           info.driver_name + " " + info.driver_version_string()};
}

std::string TuningKey::mismatch(const TuningKey& d) const {
  if (vendor_id != d.vendor_id || device_id != d.device_id)
    return "it is for device '" + device_name + "', not '" + d.device_name + "'";
  if (driver_version != d.driver_version)
    return "it is for driver " + driver + ", this device runs " + d.driver;
  if (pipeline_cache_uuid != d.pipeline_cache_uuid)
    return "its pipelineCacheUUID " + pipeline_cache_uuid + " is not the driver's " +
           d.pipeline_cache_uuid + " (another build of driver " + d.driver + ")";
  return "";
}

std::string tuning_file_path(const std::string& dir, const DeviceInfo& info) {
  return dir.empty() ? "" : dir + "/" + device_cache_stem(info) + ".tuning.json";
}

void write_tuning_file(const std::string& path, const TuningFile& f) {
  json entries = json::array();
  for (const TunedMatmul& t : f.matmul) {
    json rejected = json::array();
    for (const auto& [cfg, why] : t.rejected) rejected.push_back({{"config", cfg}, {"why", why}});
    entries.push_back({{"class", t.shape_class},
                       {"shape",
                        {{"dtype", dtype_name(t.shape.dtype)},
                         {"trans_a", t.shape.trans_a},
                         {"trans_b", t.shape.trans_b},
                         {"m", t.shape.m},
                         {"n", t.shape.n},
                         {"k", t.shape.k}}},
                       {"config", config_json(t.config)},
                       {"default", {{"name", t.default_name}, {"seconds", t.default_seconds}}},
                       {"seconds", t.seconds},
                       {"tried", t.tried},
                       {"rejected", rejected}});
  }
  const json j = {{"format", k_format},
                  {"device",
                   {{"vendor_id", f.key.vendor_id},
                    {"device_id", f.key.device_id},
                    {"driver_version", f.key.driver_version},
                    {"pipeline_cache_uuid", f.key.pipeline_cache_uuid},
                    {"name", f.key.device_name},
                    {"driver", f.key.driver}}},
                  {"matmul", entries}};
  std::error_code ec;
  if (const auto parent = std::filesystem::path(path).parent_path(); !parent.empty())
    std::filesystem::create_directories(parent, ec);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << "\n";
    out.flush();
    if (!out) throw Error("cannot write the tuning file " + tmp);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("cannot write the tuning file " + path + ": " + ec.message());
}

TuningFile read_tuning_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read the tuning file " + path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    const json j = json::parse(text.str());
    if (j.at("format").get<std::string>() != k_format)
      throw Error("format '" + j.at("format").get<std::string>() + "' is not " + k_format);
    TuningFile f;
    const json& d = j.at("device");
    f.key.vendor_id = d.at("vendor_id").get<uint32_t>();
    f.key.device_id = d.at("device_id").get<uint32_t>();
    f.key.driver_version = d.at("driver_version").get<uint32_t>();
    f.key.pipeline_cache_uuid = d.at("pipeline_cache_uuid").get<std::string>();
    f.key.device_name = d.at("name").get<std::string>();
    f.key.driver = d.at("driver").get<std::string>();
    for (const json& e : j.at("matmul")) {
      TunedMatmul t;
      t.shape_class = e.at("class").get<std::string>();
      const json& s = e.at("shape");
      t.shape = {parse_dtype(s.at("dtype").get<std::string>()),
                 s.at("trans_a").get<bool>(),
                 s.at("trans_b").get<bool>(),
                 s.at("m").get<uint32_t>(),
                 s.at("n").get<uint32_t>(),
                 s.at("k").get<uint32_t>()};
      if (ops::matmul_shape_class(t.shape) != t.shape_class)
        throw Error("class '" + t.shape_class + "' is not its shape's (" +
                    ops::matmul_shape_class(t.shape) + ")");
      t.config = config_of(e.at("config"));
      t.default_name = e.at("default").at("name").get<std::string>();
      t.default_seconds = e.at("default").at("seconds").get<double>();
      t.seconds = e.at("seconds").get<double>();
      t.tried = e.at("tried").get<uint32_t>();
      for (const json& r : e.at("rejected"))
        t.rejected.emplace_back(r.at("config").get<std::string>(), r.at("why").get<std::string>());
      f.matmul.push_back(std::move(t));
    }
    return f;
  } catch (const json::exception& e) {
    throw Error("the tuning file " + path + " is malformed: " + e.what());
  } catch (const Error& e) {
    throw Error("the tuning file " + path + " is malformed: " + e.what());
  }
}

std::shared_ptr<const Tuning> make_tuning(const TuningFile& file, const std::string& origin) {
  auto t = std::make_shared<Tuning>();
  t->origin = origin;
  for (const TunedMatmul& m : file.matmul) t->matmul[m.shape_class] = m.config;
  return t;
}

TuningLoad load_tuning(const std::string& path, const DeviceInfo& info) {
  if (path.empty() || !std::filesystem::exists(path)) return {nullptr, "no tuning file " + path};
  TuningFile f;
  try {
    f = read_tuning_file(path);
  } catch (const Error& e) {
    return {nullptr, std::string(e.what()) + "; ignored"};
  }
  if (const std::string why = f.key.mismatch(TuningKey::of(info)); !why.empty())
    return {nullptr, "the tuning file " + path + " is ignored: " + why};
  return {make_tuning(f, path), ""};
}

}  // namespace vkf
