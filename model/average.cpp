#include "model/average.h"

#include <algorithm>
#include <filesystem>

#include "engine/error.h"

namespace vkf::model {

std::vector<std::string> last_checkpoints(const std::string& dir, size_t n) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw Error(dir + " is not a directory");
  const auto found = list_checkpoints(dir);
  if (found.size() < n)
    throw Error(dir + " holds " + std::to_string(found.size()) + " checkpoints, fewer than the " +
                std::to_string(n) + " asked for");
  std::vector<std::string> out;
  for (size_t i = found.size() - n; i < found.size(); ++i) out.push_back(found[i].second);
  return out;
}

Checkpoint average_checkpoints(const std::vector<std::string>& paths) {
  if (paths.empty()) throw Error("nothing to average");
  Checkpoint first;
  std::vector<double> sum;
  uint64_t step = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    Checkpoint ck = load_checkpoint(paths[i]);
    // A NaN or Inf in one input would silently spread into every average that includes it.
    if (auto where = first_nonfinite(ParamLayout(ck.config), ck.params))
      throw Error(paths[i] + " holds a non-finite value (" + *where +
                  "): refusing to average a corrupt or diverged checkpoint");
    if (i == 0) {
      sum.assign(ck.params.begin(), ck.params.end());
      step = ck.step;
      first = std::move(ck);
      continue;
    }
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
