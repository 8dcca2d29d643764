#pragma once
// A trained model ready to use: the checkpoint (file, or a directory meaning its latest) and the
// SentencePiece model it was trained with, checked against the checksum the checkpoint records.
#include <string>

#include "model/checkpoint.h"
#include "model/data/tokenizer.h"

namespace vkf::model {

struct LoadedModel {
  std::string path;  // the checkpoint file
  Checkpoint checkpoint;
  Tokenizer tokenizer;
};

// The tokenizer is `vocab` when given, else the file the config names, beside the checkpoint.
// Throws vkf::Error when either is missing or unreadable, or when the tokenizer is not the one
// the model was trained with.
LoadedModel load_model(const std::string& file_or_dir, const std::string& vocab = "");

}  // namespace vkf::model
