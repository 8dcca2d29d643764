#pragma once
// The reserved token ids (docs/design.md): recorded in the SentencePiece model when `vkf vocab`
// trains it and in every checkpoint's config, so that the batcher, the loss (which ignores pad)
// and decoding (which starts at bos and stops at eos) agree.
namespace vkf::model {

struct SpecialIds {
  int pad = 0;
  int unk = 1;
  int bos = 2;
  int eos = 3;
};

}  // namespace vkf::model
