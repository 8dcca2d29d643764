// Corpus reading: bad lines are counted per reason and skipped, never fatal; two files of
// different lengths are an error naming both; TSV and two-file inputs read the same.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "engine/error.h"
#include "model/data/corpus.h"
#include "model/data/line_reader.h"
#include "tests/model/fixtures/data_fixture.h"

using namespace vkf;
using namespace vkf::model;

namespace {

std::string many_words(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += i ? " house" : "house";
  return text;
}

// Lines 1..9 of a corpus with one of each kind of bad pair; good pairs at lines 1, 4, 7, 9.
struct Mixed {
  std::vector<std::string> en = {"the house is small.",  // 1 good
                                 "",                     // 2 empty source
                                 "the tree.",            // 3 blank target (spaces)
                                 "we see a river.",      // 4 good, CRLF on both sides
                                 "the \xC3(house.",      // 5 invalid UTF-8 source
                                 "the day.",             // 6 invalid UTF-8 target
                                 "the night.",           // 7 good
                                 many_words(40),         // 8 too long (max_len 16)
                                 "a friend greets."};    // 9 good
  std::vector<std::string> de = {"das Haus ist klein.",  "das Haus.", "   ",
                                 "wir sehen ein Fluss.", "das Haus.", "der Tag\xED\xA0\x80.",
                                 "die Nacht.",           "das Haus.", "ein Freund grüßt."};
};

void check_mixed(const ExampleStore& store, const CorpusStats& stats, const Tokenizer& tok) {
  CHECK(stats.pairs_read == 9);
  CHECK(stats.pairs_kept == 4);
  CHECK(stats.count(SkipReason::empty) == 2);
  CHECK(stats.count(SkipReason::invalid_utf8) == 2);
  CHECK(stats.count(SkipReason::too_long) == 1);
  CHECK(stats.count(SkipReason::malformed_tsv) == 0);
  CHECK(stats.skipped_total() == 5);
  REQUIRE(store.size() == 4);
  Mixed m;
  const int good[] = {1, 4, 7, 9};
  for (size_t i = 0; i < 4; ++i) {
    INFO("example " << i);
    auto line = size_t(good[i] - 1);
    CHECK(store.line(i) == good[i]);
    auto src = store.source(i), tgt = store.target(i);
    CHECK(std::vector<int32_t>(src.begin(), src.end()) == tok.encode(m.en[line]));
    CHECK(std::vector<int32_t>(tgt.begin(), tgt.end()) == tok.encode(m.de[line]));
  }
  auto summary = stats.summary();
  REQUIRE(summary.size() == 3);  // one line per reason that occurred
  CHECK_THAT(summary[0], Catch::Contains("skipped 2 of 9") && Catch::Contains("empty") &&
                             Catch::Contains("line 2"));
  CHECK_THAT(summary[1], Catch::Contains("invalid UTF-8") && Catch::Contains("line 5"));
  CHECK_THAT(summary[2], Catch::Contains("length limit") && Catch::Contains("line 8"));
}

}  // namespace

TEST_CASE("corpus from two files skips and counts bad pairs", "[model][data][corpus]") {
  const Tokenizer& tok = test::small_tokenizer();
  test::TempDir dir;
  Mixed m;
  auto en = m.en, de = m.de;
  en[3] += "\r";
  de[3] += "\r";
  auto files = CorpusFiles::two_files(test::write_file(dir.file("c.en"), test::join_lines(en)),
                                      test::write_file(dir.file("c.de"), test::join_lines(de)));
  CorpusStats stats;
  auto store = read_corpus(files, tok, {.max_len = 16}, stats);
  check_mixed(store, stats, tok);
}

TEST_CASE("corpus from a TSV file reads like two files", "[model][data][corpus]") {
  const Tokenizer& tok = test::small_tokenizer();
  test::TempDir dir;
  Mixed m;
  std::string text;
  for (size_t i = 0; i < m.en.size(); ++i) text += m.en[i] + "\t" + m.de[i] + "\n";
  text += "no tab on this line\n";  // 10
  text += "one\ttab\ttoo many\n";   // 11
  text += "the house.\tdas Haus.";  // 12: good, no final newline
  CorpusStats stats;
  auto store = read_corpus(CorpusFiles::tsv(test::write_file(dir.file("c.tsv"), text)), tok,
                           {.max_len = 16}, stats);
  CHECK(stats.pairs_read == 12);
  CHECK(stats.count(SkipReason::malformed_tsv) == 2);
  CHECK(stats.first_line[size_t(SkipReason::malformed_tsv)] == 10);
  REQUIRE(store.size() == 5);
  CHECK(store.line(4) == 12);
  auto last = store.target(4);
  CHECK(tok.decode(std::vector<int32_t>(last.begin(), last.end())) == "das Haus.");
}

TEST_CASE("corpus files of different lengths are an error naming both", "[model][data][corpus]") {
  const Tokenizer& tok = test::small_tokenizer();
  test::TempDir dir;
  auto src = test::write_file(dir.file("long.en"), "a house.\nthe tree.\nthe day.\n");
  auto tgt = test::write_file(dir.file("short.de"), "ein Haus.\nder Baum.\n");
  CorpusStats stats;
  // (Catch2 v2 combined matchers keep pointers to their parts: build them in place.)
  CHECK_THROWS_WITH(read_corpus(CorpusFiles::two_files(src, tgt), tok, {}, stats),
                    Catch::Contains("long.en has 3 lines") && Catch::Contains("short.de has 2"));
  CHECK_THROWS_WITH(read_corpus(CorpusFiles::two_files(tgt, src), tok, {}, stats),
                    Catch::Contains("long.en has 3 lines") && Catch::Contains("short.de has 2"));
  CHECK_THROWS_WITH(read_corpus(CorpusFiles::two_files(src, dir.file("none.de")), tok, {}, stats),
                    Catch::Contains("none.de"));
}

TEST_CASE("corpus survives binary garbage", "[model][data][corpus]") {
  const Tokenizer& tok = test::small_tokenizer();
  test::TempDir dir;
  std::string junk;
  uint32_t state = 12345;
  for (int i = 0; i < 20000; ++i) {
    state = state * 1103515245u + 12345u;
    junk += char(state >> 16);  // includes NUL, \r, \n, \t and every invalid UTF-8 byte
  }
  CorpusStats stats;
  auto path = test::write_file(dir.file("junk.tsv"), junk);
  ExampleStore store;
  REQUIRE_NOTHROW(store = read_corpus(CorpusFiles::tsv(path), tok, {.max_len = 64}, stats));
  CHECK(stats.pairs_read > 0);
  CHECK(stats.pairs_kept + stats.skipped_total() == stats.pairs_read);
  CHECK(int64_t(store.size()) == stats.pairs_kept);
}

TEST_CASE("line reader strips CR and keeps line numbers", "[model][data][corpus]") {
  test::TempDir dir;
  LineReader reader(test::write_file(dir.file("x.txt"), "one\r\ntwo\n\nfour"));
  std::string_view line;
  std::vector<std::string> lines;
  while (reader.next(line)) lines.emplace_back(line);
  CHECK(lines == std::vector<std::string>{"one", "two", "", "four"});
  CHECK(reader.line_number() == 4);
  CHECK(is_blank(" \t"));
  CHECK_FALSE(is_blank(" x "));
}
