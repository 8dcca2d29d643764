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
#include "tune/attention_check.h"
#include "tune/matmul_check.h"
#include "tune/row_checks.h"

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

std::string dims(const ops::MatmulProblem& p) {
  return std::string(dtype_name(p.dtype)) + " " + std::to_string(p.trans_a) +
         std::to_string(p.trans_b) + " " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
         std::to_string(p.k) + (p.workspace ? " ws" : "");
}
std::string dims(const ops::AttentionProblem& p) {
  return std::string(dtype_name(p.dtype)) + " " + ops::attention_kernel_short_name(p.kernel) + " " +
         std::to_string(p.d_k) + "x" + std::to_string(p.d_v) + " " + std::to_string(p.len_q) + "x" +
         std::to_string(p.len_k) + (p.causal ? " causal" : "");
}
std::string dims(const ops::LayerNormProblem& p) {
  return std::string(dtype_name(p.dtype)) + (p.backward ? " bwd " : " fwd ") +
         std::to_string(p.rows) + "x" + std::to_string(p.d);
}
std::string dims(const ops::CrossEntropyProblem& p) {
  return std::string(dtype_name(p.dtype)) + " " + std::to_string(p.rows) + "x" +
         std::to_string(p.vocab);
}
std::string dims(const ops::TopKProblem& p) {
  return std::string(dtype_name(p.dtype)) + " " + std::to_string(p.rows) + "x" +
         std::to_string(p.n) + " k" + std::to_string(p.k);
}
std::string dims(const ops::AdamProblem& p) {
  return std::to_string(p.n);
}

// The entry's identity: its name (family, class, every value of the configuration), the shape
// its check runs, the device and driver, and this build's shaders.
template <class Entry>
std::string key(const Entry& t, const std::string& device) {
  const std::string text = entry_name(t) + "|" + dims(t.shape) + "|" + device;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx",
                static_cast<unsigned long long>(fnv1a(text.data(), text.size())),
                static_cast<unsigned long long>(shaders_hash()));
  return buf;
}

std::string check(Device& dev, const TunedMatmul& t, const Sabotage& sabotage) {
  return check_matmul(dev, t.config, t.shape, sabotage);
}
std::string check(Device& dev, const TunedAttention& t, const Sabotage& sabotage) {
  return check_attention(dev, t.config, t.shape, sabotage);
}
std::string check(Device& dev, const TunedLayerNorm& t, const Sabotage& sabotage) {
  ops::LayerNormConfig c = t.config;
  if (c.reads == ops::RowKernelConfig::Reads::automatic)
    c.reads = ops::RowKernelConfig::Reads::storage;  // as choose_layer_norm runs it
  return check_layer_norm(dev, c, t.shape, sabotage);
}
std::string check(Device& dev, const TunedCrossEntropy& t, const Sabotage& sabotage) {
  return check_cross_entropy(dev, t.config, t.shape, sabotage);
}
std::string check(Device& dev, const TunedTopK& t, const Sabotage& sabotage) {
  return check_topk(dev, t.config, t.shape, sabotage);
}
std::string check(Device& dev, const TunedAdam& t, const Sabotage& sabotage) {
  return check_adam(dev, t.config, sabotage);
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

  template <class Entry>
  void run(std::vector<Entry>& entries) {
    std::erase_if(entries, [&](const Entry& t) {
      const std::string k = key(t, device);
      if (passed.count(k)) {
        ++out.remembered;
        return false;
      }
      ++out.checked;
      const bool sabotaged = wrong && wrong(entry_name(t));
      const std::string why =
          check(dev, t, sabotaged ? Sabotage([](const std::string&) { return true; }) : nullptr);
      if (why.empty()) {
        newly.push_back(k);
        return false;
      }
      ++out.wrong;
      out.dropped.push_back(entry_name(t) + ": wrong against the reference: " + why);
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
  pass.run(file.matmul);
  pass.run(file.attention);
  pass.run(file.layer_norm);
  pass.run(file.cross_entropy);
  pass.run(file.topk);
  pass.run(file.adam);
  append_record(path, pass.newly);
  return out;
}

void remember_verified(const Device& dev, const TuningFile& file, const std::string& cache_dir) {
  const std::string device = device_text(dev.info());
  std::vector<std::string> keys;
  auto add = [&](const auto& entries) {
    for (const auto& t : entries) keys.push_back(key(t, device));
  };
  add(file.matmul);
  add(file.attention);
  add(file.layer_norm);
  add(file.cross_entropy);
  add(file.topk);
  add(file.adam);
  append_record(record_path(dev.info(), cache_dir), keys);
}

}  // namespace vkf::tune
