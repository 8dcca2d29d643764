#pragma once
// The training run the model tests start from: a 1-layer, d_model 32 model on the small corpus
// (small_corpus.h), batches of 256 tokens, dropout on, a short warm-up, quiet. Tests change what
// they vary (steps, precision, logging) on the copy they get.
#include <filesystem>
#include <string>

#include "model/train/trainer.h"

namespace vkf::test {

model::TrainerOptions small_run(const std::filesystem::path& out);

// A file's bytes, for comparing checkpoints and logs bit for bit.
std::string read_bytes(const std::filesystem::path& p);

}  // namespace vkf::test
