#pragma once
// A tiny random Transformer saved as a checkpoint, with its SentencePiece model beside it, as
// `vkf train` leaves one: what the inference API tests (vkf::Translator, vkf::Scorer, the C API)
// and the comparisons with `vkf translate` load. Made once per test process.
#include <filesystem>
#include <string>
#include <vector>

#include "model/config.h"

namespace vkf::test {

struct TinyModel {
  std::filesystem::path dir;         // holds checkpoint-7.safetensors and spm.model
  std::filesystem::path checkpoint;  // the file
  model::ModelConfig config;
  std::vector<std::string> sentences;  // English test input, one of them empty
};

const TinyModel& tiny_model();

}  // namespace vkf::test
