// Tokenizer, SHA-256 and UTF-8 validation: the pieces a checkpoint's vocabulary depends on.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/error.h"
#include "model/data/sha256.h"
#include "model/data/tokenizer.h"
#include "model/data/utf8.h"
#include "tests/model/fixtures/data_fixture.h"

using namespace vkf;
using namespace vkf::model;

TEST_CASE("sha256 matches the FIPS 180-4 test vectors", "[model][data][sha256]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256 gives the same digest however the input is split", "[model][data][sha256]") {
  std::string text;
  for (int i = 0; i < 300; ++i) text += char(i * 37 + 11);
  const std::string whole = sha256_hex(text);
  // Around the 55/56/64-byte padding edges and across blocks.
  for (size_t split : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 119u, 128u, 299u, 300u}) {
    Sha256 hash;
    hash.update(std::string_view(text).substr(0, split));
    hash.update(std::string_view(text).substr(split));
    CHECK(to_hex(hash.finish()) == whole);
  }
  for (size_t length : {55u, 56u, 57u, 63u, 64u, 65u}) {
    Sha256 bytewise;
    for (size_t i = 0; i < length; ++i) bytewise.update(text.data() + i, 1);
    CHECK(to_hex(bytewise.finish()) == sha256_hex(text.substr(0, length)));
  }
}

TEST_CASE("sha256 of a file equals sha256 of its bytes", "[model][data][sha256]") {
  test::TempDir dir;
  std::string bytes(200000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 7919 % 251);
  auto path = test::write_file(dir.file("blob.bin"), bytes);
  CHECK(sha256_file_hex(path) == sha256_hex(bytes));
  CHECK_THROWS_WITH(sha256_file_hex(dir.file("absent")), Catch::Contains("absent"));
}

TEST_CASE("utf8 validation accepts well-formed text and rejects the rest", "[model][data][utf8]") {
  for (const char* ok : {"", "plain ASCII", "Grüße aus Köln", "€ 5", "\xF0\x9F\x98\x80 emoji",
                         "\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF"}) {
    INFO(ok);
    CHECK(is_valid_utf8(ok));
  }
  for (const char* bad :
       {"\x80", "abc\xFF", "\xC0\xAF", "\xC1\xBF", "\xE0\x80\xAF", "\xF0\x80\x80\xAF",
        "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xE2\x82",
        "Gr\xFC\xDF"
        "e",
        "\xC3", "\xE2\x28\xA1"}) {
    INFO(bad);
    CHECK_FALSE(is_valid_utf8(bad));
  }
}

TEST_CASE("tokenizer reserves pad, unk, bos, eos and round trips text",
          "[model][data][tokenizer]") {
  const Tokenizer& tok = test::small_tokenizer();
  CHECK(tok.vocab_size() == 150);
  CHECK(tok.ids().pad == 0);
  CHECK(tok.ids().unk == 1);
  CHECK(tok.ids().bos == 2);
  CHECK(tok.ids().eos == 3);
  CHECK(tok.piece(0) == "<pad>");
  CHECK(tok.piece(1) == "<unk>");
  CHECK(tok.piece(2) == "<s>");
  CHECK(tok.piece(3) == "</s>");
  CHECK(tok.sha256().size() == 64);

  for (std::string text : {"the green house is small.", "die Straße und die Brücke grüßt.",
                           "Fenster öffnen und Datei sichern.", "a"}) {
    auto ids = tok.encode(text);
    REQUIRE_FALSE(ids.empty());
    for (int32_t id : ids) {  // pieces only: the specials are the batcher's business
      CHECK(id != tok.ids().pad);
      CHECK(id != tok.ids().bos);
      CHECK(id != tok.ids().eos);
    }
    CHECK(tok.decode(ids) == text);
    // bos/eos/pad around the pieces are ignored by decode.
    std::vector<int32_t> framed = {tok.ids().bos};
    framed.insert(framed.end(), ids.begin(), ids.end());
    framed.push_back(tok.ids().eos);
    framed.push_back(tok.ids().pad);
    CHECK(tok.decode(framed) == text);
  }
  // A character never seen in training becomes unk rather than failing.
  auto unseen = tok.encode("Ж");
  CHECK(std::find(unseen.begin(), unseen.end(), tok.ids().unk) != unseen.end());
  CHECK_THROWS_WITH(tok.decode(std::vector<int32_t>{5, 150}), Catch::Contains("150"));
  CHECK_THROWS_AS(tok.decode(std::vector<int32_t>{-1}), Error);
}

TEST_CASE("tokenizer training is reproducible and writes only the named file",
          "[model][data][tokenizer]") {
  test::TempDir dir;
  std::vector<std::string> en, de;
  test::synthetic_pairs(400, en, de, 99);
  TokenizerTrainOptions options;
  options.inputs = {test::write_file(dir.file("a.en"), test::join_lines(en)),
                    test::write_file(dir.file("a.de"), test::join_lines(de))};
  options.vocab_size = 120;
  options.max_sentences = 500;  // fewer than the 800 lines: exercises the seeded sampling
  options.output_path = dir.file("one.model");
  Tokenizer::train(options);
  options.output_path = dir.file("two.model");
  Tokenizer::train(options);
  auto one = Tokenizer::load(dir.file("one.model"));
  auto two = Tokenizer::load(dir.file("two.model"));
  CHECK(one.sha256() == two.sha256());
  CHECK(one.vocab_size() == 120);
  CHECK_FALSE(std::filesystem::exists(dir.file("one.model.tmp")));
  CHECK_FALSE(std::filesystem::exists(dir.file("one.vocab")));
}

TEST_CASE("tokenizer errors name the file", "[model][data][tokenizer]") {
  test::TempDir dir;
  CHECK_THROWS_WITH(Tokenizer::load(dir.file("missing.model")),
                    Catch::Contains("missing.model") && Catch::Contains("does not exist"));
  auto corrupt = test::write_file(dir.file("corrupt.model"), "this is not a protobuf \x01\x02\xFF");
  CHECK_THROWS_WITH(Tokenizer::load(corrupt),
                    Catch::Contains("corrupt.model") && Catch::Contains("not a SentencePiece"));
  auto empty = test::write_file(dir.file("empty.model"), "");
  CHECK_THROWS_AS(Tokenizer::load(empty), Error);

  TokenizerTrainOptions options;
  options.inputs = {dir.file("no-such-input.en")};
  options.output_path = dir.file("x.model");
  CHECK_THROWS_WITH(Tokenizer::train(options), Catch::Contains("no-such-input.en"));
  options.inputs = {test::write_file(dir.file("tiny.en"), "a b\n")};
  options.vocab_size = 3;
  CHECK_THROWS_WITH(Tokenizer::train(options), Catch::Contains("vocab_size"));
}
