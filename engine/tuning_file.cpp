#include "engine/tuning_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"
#include "engine/file_io.h"
#include "engine/json_limits.h"
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

// The evidence every family's entry carries, around its shape and configuration.
template <class P, class C>
json entry_json(const TunedEntry<P, C>& t, json shape, json config) {
  json rejected = json::array();
  for (const auto& [cfg, why] : t.rejected) rejected.push_back({{"config", cfg}, {"why", why}});
  return {{"class", t.shape_class},
          {"shape", std::move(shape)},
          {"config", std::move(config)},
          {"default", {{"name", t.default_name}, {"seconds", t.default_seconds}}},
          {"seconds", t.seconds},
          {"tried", t.tried},
          {"untried", t.untried},
          {"rejected", rejected}};
}

template <class P, class C>
void read_evidence(const json& e, TunedEntry<P, C>& t, const std::string& shape_class) {
  t.shape_class = e.at("class").get<std::string>();
  if (shape_class != t.shape_class)
    throw Error("class '" + t.shape_class + "' is not its shape's (" + shape_class + ")");
  t.default_name = e.at("default").at("name").get<std::string>();
  t.default_seconds = json_field<double>(e.at("default"), "seconds");
  t.seconds = json_field<double>(e, "seconds");
  t.tried = json_field<uint32_t>(e, "tried");
  t.untried = json_field<uint32_t>(e, "untried", 0u);  // files of the first format version lack it
  for (const json& r : e.at("rejected"))
    t.rejected.emplace_back(r.at("config").get<std::string>(), r.at("why").get<std::string>());
}

// A family's array; a file written before the family was tuned has none.
const json& family(const json& j, const char* name) {
  static const json none = json::array();
  return j.contains(name) ? j.at(name) : none;
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

size_t TuningFile::size() const {
  size_t n = 0;
  ops::for_each_family([&]<class F>(std::type_identity<F>) { n += of<F>().size(); });
  return n;
}

void write_tuning_file(const std::string& path, const TuningFile& f) {
  const json device = {{"vendor_id", f.key.vendor_id},
                       {"device_id", f.key.device_id},
                       {"driver_version", f.key.driver_version},
                       {"pipeline_cache_uuid", f.key.pipeline_cache_uuid},
                       {"name", f.key.device_name},
                       {"driver", f.key.driver}};
  json j = {{"format", k_format}, {"device", device}};
  ops::for_each_family([&]<class F>(std::type_identity<F>) {
    json entries = json::array();
    for (const TunedOf<F>& t : f.of<F>())
      entries.push_back(entry_json(t, F::problem_json(t.shape), F::config_json(t.config)));
    j[F::name] = std::move(entries);
  });
  std::error_code ec;
  if (const auto parent = std::filesystem::path(path).parent_path(); !parent.empty())
    std::filesystem::create_directories(parent, ec);
  // Unique temporary names and a rename (engine/file_io.h): two writers of one file leave one
  // of their files whole, never a mix or a missing file.
  write_file_atomically(path, j.dump(2) + "\n");
}

TuningFile read_tuning_file(const std::string& path) {
  const std::string text = read_whole_file(path, k_max_text_file_bytes, "the tuning file");
  try {
    const json j = parse_json(text, "its text");
    if (j.at("format").get<std::string>() != k_format)
      throw Error("format '" + j.at("format").get<std::string>() + "' is not " + k_format);
    TuningFile f;
    const json& d = j.at("device");
    f.key.vendor_id = json_field<uint32_t>(d, "vendor_id");
    f.key.device_id = json_field<uint32_t>(d, "device_id");
    f.key.driver_version = json_field<uint32_t>(d, "driver_version");
    f.key.pipeline_cache_uuid = d.at("pipeline_cache_uuid").get<std::string>();
    f.key.device_name = d.at("name").get<std::string>();
    f.key.driver = d.at("driver").get<std::string>();
    ops::for_each_family([&]<class F>(std::type_identity<F>) {
      for (const json& e : family(j, F::name)) {
        if constexpr (requires(const json& x) { F::superseded(x); })
          if (F::superseded(e)) continue;
        TunedOf<F> t;
        t.shape = F::problem_of(e.at("shape"));
        read_evidence(e, t, F::shape_class(t.shape));
        t.config = F::config_of(e.at("config"));
        f.of<F>().push_back(std::move(t));
      }
    });
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
  ops::for_each_family([&]<class F>(std::type_identity<F>) {
    for (const TunedOf<F>& e : file.of<F>()) t->of<F>()[e.shape_class] = e.config;
  });
  return t;
}

TuningLoad load_tuning(const std::string& path, const DeviceInfo& info) {
  // A symlink loop or a folder that cannot be searched is an error (below), not "no file".
  std::error_code ec;
  if (path.empty() || (!std::filesystem::exists(path, ec) && !ec))
    return {nullptr, "no tuning file " + path};
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
