#include "model/tuning.h"

#include <cstdio>
#include <filesystem>

#include "engine/error.h"
#include "engine/tuning_file.h"
#include "tune/model_tuner.h"
#include "tune/timer.h"
#include "tune/tuning_verify.h"

namespace vkf::model {
namespace {

// "matmul, attention, LayerNorm": the families `problems` holds.
std::string families(const ops::OpProblems& problems) {
  std::string out;
  ops::for_each_family([&]<class F>(std::type_identity<F>) {
    if (!problems.of<F>().empty()) out += (out.empty() ? "" : ", ") + std::string(F::title);
  });
  return out;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

void TuningChoice::validate() const {
  if (use == "auto" && !(budget_seconds > 0 && budget_seconds <= 7 * 24 * 3600.0))
    throw Error("the tuning budget must be more than 0 and at most a week (604800 s), not " +
                seconds(budget_seconds) + " s");
}

std::string apply_tuning(Device& dev, const TuningChoice& choice, const ops::OpProblems& problems,
                         const std::function<void(const std::string&)>& note) {
  choice.validate();
  auto tell = [&](const std::string& line) {
    if (note) note(line);
  };
  if (choice.use.empty()) return "as set on the device";
  dev.set_tuning(nullptr);
  if (choice.use == "off") return "default (--tune off)";
  const std::string dir =
      choice.cache_dir.empty() ? dev.options().pipeline_cache_dir : choice.cache_dir;
  // The tuning `f` (read from `path`) holds for `dev`, once every entry has passed the checks the
  // tuner holds its own winners to (tune/tuning_verify.h); each entry dropped is named.
  auto verified = [&](TuningFile f, const std::string& path) {
    const tune::Verification v = tune::verify_tuning(dev, f, dir);
    for (const std::string& why : v.dropped)
      tell(path + ": tuning entry dropped (its class runs the default): " + why);
    if (v.checked)
      tell("checked " + std::to_string(v.checked) + " tuning entries of " + path +
           " against the reference");
    return make_tuning(f, path);
  };
  if (choice.use != "auto") {
    // A symlink loop or an unreadable folder is read_tuning_file's to name, in words.
    std::error_code ec;
    if (!std::filesystem::exists(choice.use, ec) && !ec)
      throw Error("--tune: no tuning file " + choice.use);
    // A malformed or unreadable file is an error, not a note.
    const TuningFile f = read_tuning_file(choice.use);
    if (const std::string why = f.key.mismatch(TuningKey::of(dev.info())); !why.empty())
      return "default (the tuning file " + choice.use + " is ignored: " + why + ")";
    dev.set_tuning(verified(f, choice.use));
    return "tuned (" + choice.use + ")";
  }
  const std::string path = tuning_file_path(dir, dev.info());
  if (path.empty()) return "default (no cache directory for a tuning file)";
  TuningLoad l = load_tuning(path, dev.info());
  if (!l.tuning) {
    // The first run on this device and driver: a short search, kept for the next runs.
    tell("no tuning file for " + dev.label() + " yet: tuning its kernels (" + families(problems) +
         ") for " + seconds(choice.budget_seconds) +
         " s (--tune off skips this; `vkf tune` searches longer)");
    tune::DeviceTimer timer;
    tune::TunerOptions o;
    o.budget_seconds = choice.budget_seconds;
    const tune::TuneReport report = tune::tune_model(dev, problems, timer, o);
    write_tuning_file(path, report.file);
    tune::remember_verified(dev, report.file, dir);  // the tuner checked its winners
    // Named so a user knows what a longer `vkf tune` would add (a slow device or a large model
    // can spend the whole budget on the first families).
    if (!report.skipped.empty()) {
      std::string names;
      for (const std::string& s : report.skipped) names += (names.empty() ? "" : ", ") + s;
      tell("budget spent; " + std::to_string(report.skipped.size()) +
           " shape classes keep the defaults: " + names);
    }
    l = load_tuning(path, dev.info());
    if (!l.tuning) throw Error("the tuning file just written does not load: " + l.note);
  }
  // The cache directory's file may have come from `vkf tune --import` or a hand: checked as
  // any other (a file the tuner wrote passes from its record, without a run).
  dev.set_tuning(verified(read_tuning_file(path), path));
  return "tuned (" + path + ")";
}

}  // namespace vkf::model
