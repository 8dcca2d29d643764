#include "tune/tuning_verify.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/kernel.h"
#include "engine/shader_registry.h"
#include "engine/tuning_fit.h"
#include "tune/families.h"

namespace vkf::tune {
namespace {

// The record is small (one line an entry ever passed); a larger file is not ours to read.
constexpr off_t k_max_record_bytes = 4 << 20;

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// This build's kernels: a vkf with a changed shader checks every entry again.
uint64_t shaders_hash() {
  static const uint64_t h = [] {
    uint64_t x = fnv1a("", 0);
    for (std::string_view name : shaders::names()) {
      x = fnv1a(name.data(), name.size(), x);
      const auto spirv = shaders::find(name);
      x = fnv1a(spirv.data(), spirv.size_bytes(), x);
    }
    return x;
  }();
  return h;
}

std::string device_text(const DeviceInfo& info) {
  const TuningKey k = TuningKey::of(info);
  return std::to_string(k.vendor_id) + "/" + std::to_string(k.device_id) + "/" +
         std::to_string(k.driver_version) + "/" + k.pipeline_cache_uuid;
}

// The entry's identity: its name (family, class, every value of the configuration), the shape
// its check runs, the device and driver, and this build's shaders.
template <class F>
std::string key(const TunedOf<F>& t, const std::string& device) {
  const std::string text = entry_name<F>(t) + "|" + F::dims(t.shape) + "|" + device;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx",
                static_cast<unsigned long long>(fnv1a(text.data(), text.size())),
                static_cast<unsigned long long>(shaders_hash()));
  return buf;
}

std::string record_path(const DeviceInfo& info, const std::string& dir) {
  return dir.empty() ? "" : dir + "/" + device_cache_stem(info) + ".tuning-checks";
}

std::set<std::string> read_record(const std::string& path) {
  std::set<std::string> passed;
  struct stat st {};
  // Only a regular file of a sane size: the record is a hint, never worth a hang or a crash.
  if (path.empty() || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size > k_max_record_bytes)
    return passed;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.size() == 32) passed.insert(line);
  return passed;
}

// Appends (one short write a line, O_APPEND): two runs recording at once lose nothing.
void append_record(const std::string& path, const std::vector<std::string>& keys) {
  if (path.empty() || keys.empty()) return;
  std::error_code ec;  // the cache directory may not exist before the first pipeline cache write
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string text;
  for (const std::string& k : keys) text += k + "\n";
  if (FILE* f = std::fopen(path.c_str(), "a")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
}

struct Pass {
  Device& dev;
  std::string device;
  const std::set<std::string>& passed;
  std::vector<std::string> newly;
  Verification& out;
  const WrongEntry& wrong;

  template <class F>
  void run(TunedEntries<F>& entries) {
    std::erase_if(entries, [&](const TunedOf<F>& t) {
      const std::string k = key<F>(t, device);
      if (passed.count(k)) {
        ++out.remembered;
        return false;
      }
      ++out.checked;
      const bool sabotaged = wrong && wrong(entry_name<F>(t));
      const std::string why = FamilyTuner<F>::check(
          dev, t.config, t.shape,
          sabotaged ? Sabotage([](const std::string&) { return true; }) : nullptr);
      if (why.empty()) {
        newly.push_back(k);
        return false;
      }
      ++out.wrong;
      out.dropped.push_back(entry_name<F>(t) + ": wrong against the reference: " + why);
      return true;
    });
  }
};

}  // namespace

Verification verify_tuning(Device& dev, TuningFile& file, const std::string& cache_dir,
                           const WrongEntry& wrong) {
  Verification out;
  out.dropped = drop_misfits(file, dev.info());
  dev.set_tuning(nullptr);  // the checks force one family's candidate; the rest run defaults
  const std::string path = record_path(dev.info(), cache_dir);
  const std::set<std::string> passed = read_record(path);
  Pass pass{dev, device_text(dev.info()), passed, {}, out, wrong};
  ops::for_each_family([&]<class F>(std::type_identity<F>) { pass.run<F>(file.of<F>()); });
  append_record(path, pass.newly);
  return out;
}

void remember_verified(const Device& dev, const TuningFile& file, const std::string& cache_dir) {
  const std::string device = device_text(dev.info());
  std::vector<std::string> keys;
  ops::for_each_family([&]<class F>(std::type_identity<F>) {
    for (const TunedOf<F>& t : file.of<F>()) keys.push_back(key<F>(t, device));
  });
  append_record(record_path(dev.info(), cache_dir), keys);
}

}  // namespace vkf::tune
