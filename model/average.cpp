#include "model/average.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "engine/error.h"

namespace vkf::model {

std::vector<std::string> last_checkpoints(const std::string& dir, size_t n) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw Error(dir + " is not a directory");
  static const std::regex pattern(R"(checkpoint-(\d+)\.safetensors)");
  std::vector<std::pair<uint64_t, std::string>> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, pattern)) found.emplace_back(std::stoull(m[1]), entry.path());
  }
  std::sort(found.begin(), found.end());
  if (found.size() < n)
    throw Error(dir + " holds " + std::to_string(found.size()) + " checkpoints, fewer than the " +
                std::to_string(n) + " asked for");
  std::vector<std::string> out;
  for (size_t i = found.size() - n; i < found.size(); ++i) out.push_back(found[i].second);
  return out;
}

Checkpoint average_checkpoints(const std::vector<std::string>& paths) {
  if (paths.empty()) throw Error("nothing to average");
  Checkpoint first = load_checkpoint(paths[0]);
  std::vector<double> sum(first.params.begin(), first.params.end());
  uint64_t step = first.step;
  for (size_t i = 1; i < paths.size(); ++i) {
    Checkpoint ck = load_checkpoint(paths[i]);
    require_compatible(first.config, ck.config, paths[i]);
    if (ck.config.tokenizer_sha256 != first.config.tokenizer_sha256)
      throw Error(paths[i] + " records another vocabulary than " + paths[0]);
    for (size_t j = 0; j < sum.size(); ++j) sum[j] += ck.params[j];
    step = std::max(step, ck.step);
  }
  Checkpoint out;
  out.config = first.config;
  out.step = step;
  out.params.resize(sum.size());
  for (size_t j = 0; j < sum.size(); ++j) out.params[j] = float(sum[j] / double(paths.size()));
  return out;
}

}  // namespace vkf::model
