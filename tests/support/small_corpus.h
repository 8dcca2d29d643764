#pragma once
// A small slice of the bundled sample corpus and a vocabulary trained on it, made once per test
// process, for the tests that train (model and apps layers).
#include <filesystem>
#include <string>

#include "tests/support/temp_dir.h"

namespace vkf::test {

struct SmallCorpus {
  std::filesystem::path dir, src, tgt, vocab;
};
// The first 160 pairs of data/sample/train.{en,de} and a 300-piece vocabulary.
const SmallCorpus& small_corpus();

}  // namespace vkf::test
