#pragma once
// The tuning file: the kernel configurations the tuner (tune/) chose on one device and driver,
// with what it measured, as JSON. It is keyed like the pipeline cache (vendor, device, driver
// version, pipelineCacheUUID) and stored beside it, <cache dir>/<stem>.tuning.json: a driver
// update changes the key, and the file of the old driver is ignored, with a note, until the
// device is tuned again. A file can be copied to another machine with the same device and
// driver (`vkf tune --export/--import`); one of another device or driver is never applied.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/device_info.h"
#include "engine/ops/tuned_families.h"
#include "engine/tuning.h"

namespace vkf {

struct TuningKey {
  uint32_t vendor_id = 0, device_id = 0, driver_version = 0;
  std::string pipeline_cache_uuid;  // hex
  std::string device_name, driver;  // for people reading the file (not part of the match)
  static TuningKey of(const DeviceInfo& info);
  // Why a file with this key does not apply to `device`'s ("" when it does).
  std::string mismatch(const TuningKey& device) const;
};

// One shape class's winner, and the evidence; for every family (Problem: the shape it was
// timed at, Config: the kernel configuration).
template <class Problem, class Config>
struct TunedEntry {
  std::string shape_class;  // the family's *_shape_class(shape)
  Problem shape;            // the shape it was timed at
  Config config;
  std::string default_name;  // the static table's row or default configuration for it
  double default_seconds = 0, seconds = 0;
  uint32_t tried = 0;  // candidates timed
  // Candidates the budget left untimed (the search stopped starting new ones).
  uint32_t untried = 0;
  // Candidates dropped by the correctness check: (configuration, why).
  std::vector<std::pair<std::string, std::string>> rejected;
};

template <class F>
using TunedOf = TunedEntry<typename F::Problem, typename F::Config>;
template <class F>
using TunedEntries = std::vector<TunedOf<F>>;
using TunedMatmul = TunedOf<ops::MatmulFamily>;
using TunedAttention = TunedOf<ops::AttentionFamily>;
using TunedLayerNorm = TunedOf<ops::LayerNormFamily>;
using TunedCrossEntropy = TunedOf<ops::CrossEntropyFamily>;
using TunedTopK = TunedOf<ops::TopKFamily>;
using TunedAdam = TunedOf<ops::AdamFamily>;

struct TuningFile {
  TuningKey key;
  // Each family's entries, in the JSON array of its name (F::name).
  ops::PerFamily<TunedEntries> entries;
  template <class F>
  TunedEntries<F>& of() {
    return entries.of<F>();
  }
  template <class F>
  const TunedEntries<F>& of() const {
    return entries.of<F>();
  }
  size_t size() const;  // entries over every family
};

// <dir>/<device_cache_stem(info)>.tuning.json; "" when dir is "".
std::string tuning_file_path(const std::string& dir, const DeviceInfo& info);
// Written whole to a temporary file, then renamed over `path`. Throws Error naming the path.
void write_tuning_file(const std::string& path, const TuningFile& file);
// Throws Error naming the path and what is wrong (unreadable, not JSON, a field missing).
TuningFile read_tuning_file(const std::string& path);
// The configurations the ops consult (Device::set_tuning), by shape class.
std::shared_ptr<const Tuning> make_tuning(const TuningFile& file, const std::string& origin);

// A tuning file for `info`'s device: tuning is null when the file is missing, unreadable or of
// another device or driver, and `note` says which (one line); else `note` is empty.
struct TuningLoad {
  std::shared_ptr<const Tuning> tuning;
  std::string note;
};
TuningLoad load_tuning(const std::string& path, const DeviceInfo& info);

}  // namespace vkf
