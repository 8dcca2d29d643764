#include "tune/model_tuner.h"

#include <algorithm>
#include <functional>
#include <set>

#include "engine/stop_request.h"

namespace vkf::tune {
namespace {

using Clock = std::chrono::steady_clock;

struct Job {
  std::string name;  // "<family> <class>"
  int family;        // the jobs of a family are adjacent
  // Searches until the deadline, adds its entry to the file, returns its untried count.
  std::function<uint32_t(Clock::time_point, const StepReport&, TuningFile&)> run;
};

// One job a shape class: the first work of each class is the one timed.
template <class F>
void add_jobs(std::vector<Job>& jobs, Device& dev, const ops::OpProblems& problems, Timer& timer,
              const TunerOptions& options) {
  std::set<std::string> seen;
  const int index = jobs.empty() ? 0 : jobs.back().family + 1;
  for (const typename F::Work& w : problems.of<F>()) {
    const std::string cls = F::shape_class(ops::problem_of(w));
    if (!seen.insert(cls).second) continue;
    jobs.push_back({std::string(F::name) + " " + cls, index,
                    [&dev, &timer, &options, w](Clock::time_point deadline, const StepReport& step,
                                                TuningFile& f) {
                      f.of<F>().push_back(
                          FamilyTuner<F>::tune(dev, w, timer, options, deadline, step));
                      return f.of<F>().back().untried;
                    }});
  }
}

}  // namespace

TuneReport tune_model(Device& dev, const TuneShapes& shapes, Timer& timer,
                      const TunerOptions& options) {
  TuneReport report;
  report.file.key = TuningKey::of(dev.info());
  std::vector<Job> jobs;
  ops::for_each_family(
      [&]<class F>(std::type_identity<F>) { add_jobs<F>(jobs, dev, shapes, timer, options); });

  const Clock::time_point start = Clock::now();
  const auto seconds_since = [&](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const int families = jobs.empty() ? 0 : jobs.back().family + 1;
  Clock::time_point family_end = start;
  for (size_t j = 0; j < jobs.size(); ++j) {
    // At most a year: clock ticks overflow near 292 years, and a budget past that would end
    // the search at once (vkf refuses such a --budget; a library caller is clamped).
    const double left = std::min(options.budget_seconds, 366.0 * 24 * 3600) - seconds_since(start);
    if (left <= 0) {  // the budget is spent: the rest keep their defaults
      for (size_t r = j; r < jobs.size(); ++r) report.skipped.push_back(jobs[r].name);
      break;
    }
    // Each family an even share of what is left when it starts, each of its classes an even
    // share of what is left of the family's: a search finished early leaves its time to the rest.
    if (j == 0 || jobs[j].family != jobs[j - 1].family)
      family_end = Clock::now() +
                   std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double>(left / double(families - jobs[j].family)));
    // A family past its share (its searches overran: a candidate's default run and check are
    // never cut short) leaves its other classes at the defaults rather than take the next
    // family's time; its first class is always searched.
    const bool first_of_family = j == 0 || jobs[j].family != jobs[j - 1].family;
    if (!first_of_family && Clock::now() >= family_end) {
      report.skipped.push_back(jobs[j].name);
      continue;
    }
    size_t in_family = 0;
    for (size_t r = j; r < jobs.size() && jobs[r].family == jobs[j].family; ++r) ++in_family;
    const Clock::time_point now = Clock::now();
    const Clock::time_point deadline =
        family_end > now ? now + (family_end - now) / int64_t(in_family) : now;
    auto step = [&](size_t i, size_t n, const std::string& best) {
      // A stop request (engine/stop_request.h) ends the search between candidates.
      throw_if_stop_requested("tuning " + jobs[j].name);
      if (!options.progress) return;
      Progress pr{j, jobs.size(), i, n, jobs[j].name, best, 0};
      // By candidates, or by the budget where that is further, but never past this class.
      const double by_time = seconds_since(start) / options.budget_seconds;
      const double by_count =
          (double(j) + double(i) / double(std::max<size_t>(n, 1))) / double(jobs.size());
      pr.fraction = std::max(by_count, std::min(by_time, double(j + 1) / double(jobs.size())));
      options.progress(pr);
    };
    report.untried += jobs[j].run(deadline, step, report.file);
  }
  if (options.progress) options.progress({jobs.size(), jobs.size(), 0, 0, "", "", 1.0});
  return report;
}

}  // namespace vkf::tune
