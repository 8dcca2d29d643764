// One optimizer step across the replicas of this process and every process of the group: the
// micro-batches split by share, the gradient exchange (overlapped with the backward or after
// it), the Adam update, and the balancing of shares by measured throughput.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/error.h"
#include "model/train/run.h"

namespace vkf::model::training {
namespace {

// Dropout seed of micro-batch `micro` of a step: Philox is keyed by (seed, step, tensor,
// element), so micro-batches of one step need seeds of their own.
uint32_t micro_batch_seed(uint64_t seed, int micro) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + uint64_t(micro) * 0xbf58476d1ce4e5b9ull + 1;
  z = (z ^ (z >> 31)) * 0x94d049bb133111ebull;
  return uint32_t(z ^ (z >> 29));
}

// Rows of a batch per replica, proportional to the weights; largest remainders get the leftover
// rows (ties to the lower index), so every process computes the same split.
std::vector<int> split_rows(int rows, const std::vector<double>& weights) {
  const size_t n = weights.size();
  double total = 0;
  for (double w : weights) total += w;
  std::vector<int> out(n, 0);
  std::vector<std::pair<double, size_t>> rest;
  int given = 0;
  for (size_t i = 0; i < n; ++i) {
    const double exact = double(rows) * weights[i] / total;
    out[i] = int(exact);
    given += out[i];
    rest.emplace_back(-(exact - double(out[i])), i);
  }
  std::sort(rest.begin(), rest.end());
  for (size_t k = 0; given < rows; ++k, ++given) out[rest[k % n].second]++;
  return out;
}

// Rows [first, first + count) of a batch.
BatchTokens slice_rows(const Batch& b, int first, int count) {
  auto rows = [&](const std::vector<int32_t>& v, int len) {
    return std::vector<int32_t>(v.begin() + ptrdiff_t(first) * len,
                                v.begin() + ptrdiff_t(first + count) * len);
  };
  return {rows(b.src, b.src_len), rows(b.tgt_in, b.tgt_len), rows(b.tgt_out, b.tgt_len),
          rows(b.src_lengths, 1), rows(b.tgt_lengths, 1)};
}

}  // namespace

TrainGraph& GraphCache::get(int batch, int src_len, int tgt_len) {
  BucketShape shape{uint32_t(batch), uint32_t(src_len), uint32_t(tgt_len)};
  auto it = graphs_.find(shape);
  if (it == graphs_.end())
    it = graphs_
             .emplace(shape, std::make_unique<TrainGraph>(dev_, params_, shape, scalars_, options_))
             .first;
  return *it->second;
}

void StepTotals::sum_across(ProcessGroup* group) {
  if (!group) return;
  std::vector<double> v{loss, nll, tokens, stop_requested ? 1.0 : 0.0, save_due ? 1.0 : 0.0};
  group->sum(v.data(), v.size());
  loss = v[0];
  nll = v[1];
  tokens = v[2];
  stop_requested = v[3] > 0;
  save_due = v[4] > 0;
}

// One optimizer step on every replica: the micro-batches, the gradient exchange, the update.
Run::StepOutcome Run::train_step(uint64_t step, bool save_due) {
  StepOutcome out;
  StepTotals& totals = out.totals;
  uint64_t tokens = 0;
  const BatchPosition step_start = stream_->position();
  try {
    const bool overlap = !exchanges_.empty() && o_.exchange == TrainerOptions::Exchange::overlapped;
    for (int micro = 0; micro < o_.accumulate; ++micro) {
      // A stop request is honoured before any micro-batch, so a large --accumulate cannot hold
      // Ctrl-C off for minutes. The gradient exchange only runs within the last micro-batch,
      // so nothing is in flight between replicas here.
      if (stop_agreed()) {
        if (micro > 0) {
          for (Replica& r : replicas_) r.params->zero_grads();
          stream_ = std::make_unique<BatchStream>(*train_batcher_, step_start);
        }
        out.abandoned = true;
        out.dropped = micro;
        return out;
      }
      Batch b = stream_->next();
      ++micro_batches_run_;
      totals += run_micro_batch(b, step, micro, overlap && micro + 1 == o_.accumulate);
      tokens += uint64_t(b.tgt_tokens);
      out.io_tokens += uint64_t(b.src_tokens + b.tgt_tokens);
    }
    // Summed across processes so that every process decides alike.
    totals.stop_requested = stop_requested_here();
    totals.save_due = save_due;
    totals.sum_across(o_.group);
    if (!std::isfinite(totals.loss) || !std::isfinite(totals.nll))
      throw Error("the loss became " + std::string(std::isnan(totals.loss) ? "NaN" : "infinite") +
                  " at step " + std::to_string(step) + "; " + last_good() +
                  " (a lower learning rate or longer warm-up may help)");
    // Exchange time the step waits for: all of it after the backward, or (overlapped) what is
    // left once the last replica's backward has finished.
    const auto exchange_start = overlap ? last_backward_done_ : Clock::now();
    for (auto& exchange : exchanges_) {
      if (overlap)
        exchange->finish();
      else
        exchange->all_reduce();
    }
    if (!exchanges_.empty()) out.exchange_seconds = seconds_since(exchange_start);
    if (hooks_.nonfinite_gradient && hooks_.nonfinite_gradient(step))
      for (Replica& r : replicas_) {
        const auto& c = r.params->chunks()[0];
        r.dev->upload(c.grads.ref().slice(0, 4), std::vector<float>{INFINITY});
      }
    // The mean over every token of the step, whatever each replica's share, with the loss
    // scale divided out.
    for (Replica& r : replicas_) {
      r.sc->step = uint32_t(step);  // also on replicas that had no rows this step
      r.sc->grad_scale = 1.0f / (float(std::max<uint64_t>(tokens, 1)) * loss_scale());
      r.optimizer->submit();
    }
    for (Replica& r : replicas_) out.opt = r.optimizer->collect();
  } catch (const DeviceLostError& e) {
    throw Error(std::string("a device was lost at step ") + std::to_string(step) + " (" + e.what() +
                "); " + last_good() + "; --resume continues from it, with any number of devices");
  }
  return out;
}

// A stop asked of this process: by a signal, or by the test hook after so many micro-batches.
bool Run::stop_requested_here() const {
  return (o_.stop_requested && o_.stop_requested->load()) ||
         (hooks_.stop_after_micro_batches && micro_batches_run_ >= hooks_.stop_after_micro_batches);
}

bool Run::stop_agreed() {
  // Every process must take the same decision, so the flag is summed like the step's numbers.
  std::vector<double> flag{stop_requested_here() ? 1.0 : 0.0};
  sum_across_processes(flag);
  return flag[0] > 0;
}

StepTotals Run::run_micro_batch(const Batch& b, uint64_t step, int micro, bool exchange) {
  const std::vector<int> rows = split_rows(b.batch_size, weights_);
  int first = 0;
  for (int g = 0; g < replicas_[0].global_index; ++g) first += rows[size_t(g)];
  struct Pending {
    Replica* r;
    TrainGraph* g;
    int rows;
    Clock::time_point submitted;
  };
  std::vector<Pending> pending;
  last_backward_done_ = Clock::now();  // stays so when no replica here has rows this step
  for (size_t i = 0; i < replicas_.size(); ++i) {
    Replica& r = replicas_[i];
    const int n = rows[size_t(r.global_index)];
    if (n > 0) {
      if (hooks_.before_submit) hooks_.before_submit(step, r.global_index);
      TrainGraph& g = r.train_graphs->get(n, b.src_len, b.tgt_len);
      g.set_batch(slice_rows(b, first, n));
      r.sc->step = uint32_t(step);
      r.sc->seed = micro_batch_seed(o_.seed, micro);
      r.sc->dropout_row = uint32_t(first);  // the masks one device with the whole batch draws
      // The loss gradient is scaled up in fp16 (LossScale), so small gradients survive fp16.
      r.sc->grad_scale = loss_scale();
      if (exchange) {
        // Each bucket's copy to staging is queued right behind the segment that completes it.
        const auto& after = downloads_after_segment(g);
        for (size_t k = 0; k < g.segments(); ++k) {
          g.submit_segment(k);
          for (auto [e, bucket] : after[k]) exchanges_[e]->download(i, bucket);
        }
      } else {
        g.submit();
      }
      pending.push_back({&r, &g, n, Clock::now()});
    } else if (exchange) {  // no rows this step: its (zero) gradients go at once
      for (size_t e = 0; e < exchanges_.size(); ++e)
        for (size_t bucket = 0; bucket < exchanges_[e]->buckets(); ++bucket)
          exchanges_[e]->download(i, bucket);
    }
    first += n;
  }
  StepTotals sums;
  // Collects the replicas that have finished, which also times each for balancing.
  auto collect_finished = [&](bool all) {
    while (!pending.empty()) {
      for (size_t i = 0; i < pending.size();) {
        Pending& p = pending[i];
        if ((!all || pending.size() > 1) && !p.g->ready()) {
          ++i;
          continue;
        }
        StepResult res = p.g->collect();
        last_backward_done_ = Clock::now();
        p.r->busy_seconds += seconds_since(p.submitted);
        p.r->rows_done += p.rows;
        sums.loss += res.loss_sum;
        sums.nll += res.nll_sum;
        sums.tokens += double(res.tokens);
        pending.erase(pending.begin() + ptrdiff_t(i));
      }
      if (!all) return;
      if (!pending.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  };
  if (exchange) {
    // Last layer first, as the backward finishes them (the same order on every process, which
    // MPI needs): sum each bucket while the devices run the layers below it.
    for (size_t e = exchanges_.size(); e-- > 0;)
      for (size_t bucket = exchanges_[e]->buckets(); bucket-- > 0;) {
        while (!exchanges_[e]->downloaded(bucket)) {
          collect_finished(false);
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        collect_finished(false);
        exchanges_[e]->reduce(bucket);
      }
  }
  collect_finished(true);
  return sums;
}

const std::vector<std::vector<std::pair<size_t, size_t>>>& Run::downloads_after_segment(
    const TrainGraph& g) {
  auto it = download_plans_.find(&g);
  if (it != download_plans_.end()) return it->second;
  // The segment after which every float of a bucket is final: the last one touching it.
  std::vector<std::vector<std::pair<size_t, size_t>>> plan(g.segments());
  const auto& chunks = replicas_[0].params->chunks();
  for (size_t e = 0; e < exchanges_.size(); ++e)
    for (size_t bucket = 0; bucket < exchanges_[e]->buckets(); ++bucket) {
      auto [lo, hi] = exchanges_[e]->bucket_range(bucket);
      lo += chunks[e].first;
      hi += chunks[e].first;
      size_t last = g.segments() - 1;
      for (size_t k = 0; k < g.segments(); ++k)
        for (auto [first, end] : g.final_ranges(k))
          if (first < hi && lo < end) last = k;
      plan[last].emplace_back(e, bucket);
    }
  return download_plans_.emplace(&g, std::move(plan)).first->second;
}

void Run::rebalance() {
  std::vector<double> rate(size_t(world()), 0.0);
  for (const Replica& r : replicas_)
    rate[size_t(r.global_index)] = r.rows_done / std::max(r.busy_seconds, 1e-9);
  sum_across_processes(rate);
  std::string line = "balanced shares (rows/s):";
  for (size_t g = 0; g < rate.size(); ++g) {
    weights_[g] = std::max(rate[g], 1e-6);
    char part[48];
    std::snprintf(part, sizeof part, " [%zu] %.0f", g, rate[g]);
    line += part;
  }
  say(line);
  log({{"event", "balance"}, {"step", state_.step}, {"rows_per_second", rate}});
}

}  // namespace vkf::model::training
