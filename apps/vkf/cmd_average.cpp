// vkf average: the element-wise mean of several checkpoints of one model (the paper averages the
// last 5), written as a new checkpoint.
#include <cstdio>
#include <filesystem>

#include "apps/vkf/app_options.h"
#include "apps/vkf/command.h"
#include "engine/error.h"
#include "engine/file_io.h"
#include "model/average.h"
#include "model/params.h"

namespace vkf::app {
namespace {

struct AverageArgs {
  std::string dir;
  size_t last = 5;
  std::vector<std::string> inputs;
  std::string out;
};

int run_average(const AverageArgs& a) {
  std::vector<std::string> paths = a.inputs;
  for (const auto& p : paths)
    if (std::filesystem::is_directory(p))
      throw Error("vkf average --inputs takes checkpoint files; " + p +
                  " is a directory (to average its last checkpoints: --model " + p + " --last N)");
  if (paths.empty()) {
    if (a.dir.empty()) throw Error("vkf average: give --model DIR [--last N] or --inputs FILES");
    paths = model::last_checkpoints(a.dir, a.last);
  }
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const auto& p : paths) inputs.push_back({"the input", p});
  refuse_same_file("--out", a.out, inputs);
  model::Checkpoint avg = model::average_checkpoints(paths);
  model::save_checkpoint(a.out, avg.config, model::ParamLayout(avg.config), avg.params, avg.step);
  print("averaged %zu checkpoints into %s:\n", paths.size(), a.out.c_str());
  for (const auto& p : paths) print("  %s\n", p.c_str());
  return 0;
}

RegisterCommand reg("average", "Average the parameters of several checkpoints", [](CLI::App& sub) {
  auto a = std::make_shared<AverageArgs>();
  auto* dir = sub.add_option("--model", a->dir, "Directory whose last checkpoints to average");
  sub.add_option("--last", a->last, "How many of its last checkpoints")
      ->check(int_range(1, 100000))
      ->capture_default_str();
  auto* inputs = sub.add_option("--inputs", a->inputs, "Checkpoint files to average");
  dir->excludes(inputs);
  sub.add_option("--out", a->out, "The averaged checkpoint to write")->required();
  return [a]() { return run_average(*a); };
});

}  // namespace
}  // namespace vkf::app
