// The safetensors reader's rules (model/safetensors.h), the helpers that keep files whole
// (temporary files, stale leftovers, strict numbers) and the lock on an output directory.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/error.h"
#include "model/data/line_reader.h"
#include "model/safetensors.h"
#include "model/train/output_lock.h"
#include "tests/support/small_corpus.h"

using namespace vkf;
using namespace vkf::model;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// A safetensors file from a header (as JSON text) and data bytes.
std::string file_of(const std::string& header, const std::string& data, size_t pad_to = 8) {
  std::string h = header;
  while ((h.size() + 8) % pad_to) h += ' ';
  const uint64_t n = h.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + h + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

SafetensorsFile parse(const std::string& header, const std::string& data, size_t pad_to = 8) {
  return SafetensorsFile::from_bytes(file_of(header, data, pad_to), "t.safetensors");
}

}  // namespace

TEST_CASE("safetensors: a valid file reads back, at any header alignment", "[model][safetensors]") {
  const std::string data = floats({1, 2, 3, 4, 5});
  const std::string header =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[16,20]},)"
      R"("e":{"dtype":"F32","shape":[0,3],"data_offsets":[20,20]}})";
  // pad_to 1: the data starts at an odd byte; copy() must still give the floats.
  for (size_t pad : {8, 1}) {
    SafetensorsFile f = parse(header, data, pad);
    CHECK(f.metadata().at("k") == "v");
    CHECK(f.shape("a") == std::vector<int64_t>{2, 2});
    std::vector<float> a(4), b(1);
    f.copy("a", a.data());
    f.copy("b", b.data());
    CHECK(a == std::vector<float>{1, 2, 3, 4});
    CHECK(b[0] == 5);
    CHECK(f.numel("e") == 0);
  }
}

TEST_CASE("safetensors: every rule of the reference parser is enforced", "[model][safetensors]") {
  const std::string data = floats({1, 2, 3, 4});
  auto refused = [&](const std::string& header, const std::string& why,
                     const std::string& bytes = "") {
    INFO(header);
    CHECK_THROWS_WITH(parse(header, bytes.empty() ? data : bytes),
                      Contains("not a valid safetensors file") && Contains(why));
  };
  refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
          "overlapping");
  refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
          R"("b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})",
          "a gap");
  refused(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})", "trailing bytes");
  refused(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[2,18]}})", "ends at byte 18");
  refused(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
          R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
          "names 'a' twice");
  refused(R"({"a":{"dtype":"F32","shape":[4.0],"data_offsets":[0,16]}})", "non-negative integers");
  refused(R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", "non-negative integers");
  refused(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,16]}})",
          "more elements than 2^64");
  refused(R"({"a":{"dtype":"F32","shape":[65536,65536],"data_offsets":[0,16]}})",
          "more than the file's");
  refused(R"({"a":{"dtype":"F16","shape":[8],"data_offsets":[0,16]}})", "dtype F16");
  refused(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", "needs 12");
  refused(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[16,0]}})", "end before they begin");
  refused(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0]}})", "data_offsets");
  refused(R"({"a":[1,2]})", "not described by an object");
  refused(R"({"__metadata__":{"step":3},"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
          "is not a string");
  refused(R"([1,2,3])", "not a JSON object");
  refused(R"({"a":)", "not JSON");
  CHECK_THROWS_WITH(SafetensorsFile::from_bytes("\xff\xff\xff\xff\xff\xff\xff\xff{}", "t"),
                    Contains("does not fit"));
  CHECK_THROWS_WITH(SafetensorsFile::from_bytes("abc", "t"), Contains("only 3 bytes"));
}

TEST_CASE("metadata numbers are plain decimals", "[model][safetensors]") {
  CHECK(parse_decimal_u64("0") == 0u);
  CHECK(parse_decimal_u64("18446744073709551615") == UINT64_MAX);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1e3", "0x10", "18446744073709551616",
                          "99999999999999999999999", "12abc"})
    CHECK_FALSE(parse_decimal_u64(bad).has_value());
}

TEST_CASE("temporary files of ended processes are removed, others kept", "[model][safetensors]") {
  const fs::path dir = test::temp_dir("stale");
  // A child that has exited and been reaped: its pid is free.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const std::string dead = std::to_string(child), self = std::to_string(getppid());
  for (const std::string& name :
       {"checkpoint-4.safetensors.tmp." + dead, "vocab.model.tmp." + dead,
        "checkpoint-5.safetensors.tmp." + self, std::string("checkpoint-6.safetensors"),
        std::string("notes.tmp.txt"), std::string("notes.tmp."), ".tmp." + dead,
        "notes.tmp." + dead + "x"})
    std::ofstream(dir / name) << "x";
  const auto removed = remove_stale_temporaries(dir.string());
  CHECK(removed.size() == 2);
  CHECK_FALSE(fs::exists(dir / ("checkpoint-4.safetensors.tmp." + dead)));
  CHECK_FALSE(fs::exists(dir / ("vocab.model.tmp." + dead)));
  CHECK(fs::exists(dir / ("checkpoint-5.safetensors.tmp." + self)));  // a live process's
  CHECK(fs::exists(dir / "checkpoint-6.safetensors"));
  CHECK(fs::exists(dir / "notes.tmp.txt"));  // not <name>.tmp.<pid>: never ours
  CHECK(fs::exists(dir / "notes.tmp."));
  CHECK(fs::exists(dir / (".tmp." + dead)));
  CHECK(fs::exists(dir / ("notes.tmp." + dead + "x")));
}

TEST_CASE("a failed atomic write leaves neither the file nor its temporary",
          "[model][safetensors]") {
  const fs::path dir = test::temp_dir("atomic");
  const std::string path = (dir / "missing-dir" / "x.safetensors").string();
  CHECK_THROWS_WITH(write_safetensors(path, {}, {}), Contains("cannot write"));
  const std::vector<float> v(4, 1.0f);
  write_safetensors((dir / "ok.safetensors").string(), {{"k", "v"}}, {{"t", {4}, v.data()}});
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  CHECK(SafetensorsFile((dir / "ok.safetensors").string()).numel("t") == 4);
  CHECK_THROWS_WITH(SafetensorsFile(dir.string()), Contains("is a directory"));
}

TEST_CASE("one lock per output directory, naming its holder", "[model][safetensors]") {
  const fs::path dir = test::temp_dir("lock") / "run";
  {
    OutputLock first(dir.string());
    CHECK(fs::exists(dir / k_output_lock_name));
    // flock locks belong to the open file, so a second open in this process conflicts too.
    CHECK_THROWS_WITH(
        OutputLock(dir.string()),
        Contains("in use by another training") && Contains("process " + std::to_string(getpid())));
  }
  CHECK_NOTHROW(OutputLock(dir.string()));  // released with the first
}

TEST_CASE("lines over the cap are dropped as they are read", "[model][corpus]") {
  // Built by appending: g++ 12 -O3 warns falsely (-Warray-bounds) on "literal" + std::string.
  std::string text = "short\n";
  text.append(100, 'x').append("\nend\r\n");
  std::istringstream in(text);
  int64_t reported = 0;
  LineReaderOptions options{.max_line_bytes = 10};
  options.on_too_long = [&](int64_t line) { reported = line; };
  LineReader reader(in, "<in>", options);
  std::string_view line;
  REQUIRE(reader.next(line));
  CHECK(line == "short");
  CHECK_FALSE(reader.too_long());
  REQUIRE(reader.next(line));
  CHECK(reader.too_long());
  CHECK(line.empty());
  CHECK(reported == 2);
  REQUIRE(reader.next(line));
  CHECK(line == "end");
  CHECK_FALSE(reader.next(line));
  CHECK_THROWS_WITH(LineReader(fs::temp_directory_path().string()), Contains("is a directory"));
}
