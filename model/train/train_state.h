#pragma once
// The optimizer-state file that sits beside each checkpoint (docs/design.md): Adam's moments,
// the step, where the data stream stands and the run's seed: everything besides the parameters
// that a resumed run needs to continue exactly as an uninterrupted one would.
#include <cstdint>
#include <string>
#include <vector>

#include "model/data/batcher.h"
#include "model/safetensors.h"
#include "model/train/loss_scale.h"

namespace vkf::model {

struct TrainState {
  uint64_t step = 0;           // optimizer steps taken
  BatchPosition position;      // the next batch the stream gives
  uint64_t seed = 0;           // the run's seed (dropout, shuffling)
  uint64_t tokens_seen = 0;    // source + target tokens trained on so far
  double elapsed_seconds = 0;  // training time so far, over every resumed part
  int64_t train_pairs = 0;     // examples in the training store: a changed corpus is refused
  // params_checksum() of the checkpoint this state belongs to: a state copied beside another
  // run's checkpoint of the same step is refused. Empty in files written before it existed.
  std::string params_checksum;
  // Mixed precision (fp16 runs): the dynamic loss scale, its clean-step count and the steps
  // skipped so far. Files of fp32 runs (and older ones) hold the defaults.
  LossScale loss_scale;
  std::vector<float> adam_m, adam_v;  // flat, ParamLayout order
};

// "checkpoint-<step>.optimizer.safetensors"
std::string train_state_name(uint64_t step);
// The state file that belongs to a checkpoint file ("X.safetensors" -> "X.optimizer.safetensors").
std::string train_state_path(const std::string& checkpoint_path);

// Written to a temporary file and renamed, like the checkpoint.
void save_train_state(const std::string& path, const TrainState& state);
// Throws vkf::Error when the file is missing, corrupt or holds moments of another size.
TrainState load_train_state(const std::string& path, uint64_t expected_floats);
// The same, from a file already read.
TrainState train_state_from(const SafetensorsFile& file, uint64_t expected_floats);

}  // namespace vkf::model
