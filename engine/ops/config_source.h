#pragma once
// Where an op's kernel configuration came from, for the ops' choice functions (attention,
// LayerNorm, cross-entropy: *_choice.h) and what the tools print: forced by the caller (a test
// or bench), the device's tuning for the shape class (engine/tuning.h), or the static default.
namespace vkf::ops {

enum class ConfigSource { forced, tuned, table };

inline const char* config_source_name(ConfigSource s) {
  return s == ConfigSource::forced ? "forced" : s == ConfigSource::tuned ? "tuned" : "table";
}

}  // namespace vkf::ops
