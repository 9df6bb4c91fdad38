#include "stoker/pipeline/worker_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "stoker/util/status.h"

namespace stoker {
namespace {

// A tuning measures at most this many settings, whatever the budgets.
constexpr size_t kMaxTrials = 16;
// Active workers busy less than this fraction of the time while the consumer waits: they are
// idle on a full window, and a deeper one may help.
constexpr double kWorkersIdle = 0.9;

const TunerOptions& checked(const TunerOptions& o) {
  if (o.max_workers < 1 || o.start_workers < 1 || o.start_workers > o.max_workers ||
      o.max_prefetch < 1 || o.start_prefetch < 1 || o.start_prefetch > o.max_prefetch ||
      o.window_batches < 1 || o.warmup_batches < 0 || !(o.min_window_seconds >= 0) ||
      !(o.margin >= 0 && o.margin < 1) || !(o.loader_bound_wait >= 0))
    throw Error(invalid_argument(
        fmt::format("worker tuner: bad options (workers {} of {}, prefetch {} of {}, windows of {} "
                    "batches after {}, margin {})",
                    o.start_workers, o.max_workers, o.start_prefetch, o.max_prefetch,
                    o.window_batches, o.warmup_batches, o.margin)));
  return o;
}

// "1,850" for rates of 100 and more, three significant digits below.
std::string rate_text(double rate) {
  if (rate < 100) return fmt::format("{:.3g}", rate);
  std::string digits = fmt::format("{:.0f}", rate);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(at, 1, ',');
  return digits;
}

std::string setting_text(const TuningTrial& t, bool with_prefetch) {
  std::string text = fmt::format("{} worker{}", t.workers, t.workers == 1 ? "" : "s");
  if (with_prefetch) text += fmt::format(", prefetch {}", t.prefetch);
  return text;
}

}  // namespace

WorkerTuner::WorkerTuner(TunerOptions options)
    : o_(checked(options)),
      workers_(o_.start_workers),
      prefetch_(o_.start_prefetch),
      skip_(o_.warmup_batches) {}

bool WorkerTuner::on_batch(const LoaderCounters& now) {
  if (settled()) return false;
  ++batches_;
  const LoaderCounters last = last_;
  const bool measure = have_last_;
  last_ = now;
  have_last_ = true;
  if (!measure) return false;
  if (skip_ > 0) {
    --skip_;
    return false;
  }
  window_.seconds += now.seconds - last.seconds;
  window_.wait_seconds += now.wait_seconds - last.wait_seconds;
  window_.busy_seconds += now.busy_seconds - last.busy_seconds;
  ++window_batches_;
  if (window_batches_ < o_.window_batches || window_.seconds < o_.min_window_seconds) return false;
  const double seconds = std::max(window_.seconds, 1e-12);
  TuningTrial trial;
  trial.workers = workers_;
  trial.prefetch = prefetch_;
  trial.batches_per_s = static_cast<double>(window_batches_) / seconds;
  trial.wait_fraction = std::clamp(window_.wait_seconds / seconds, 0.0, 1.0);
  trial.busy_fraction = std::clamp(window_.busy_seconds / (workers_ * seconds), 0.0, 1.0);
  const int workers = workers_;
  const int prefetch = prefetch_;
  window_ = LoaderCounters{};
  window_batches_ = 0;
  decide(trial);
  return workers_ != workers || prefetch_ != prefetch;
}

void WorkerTuner::decide(const TuningTrial& trial) {
  trials_.push_back(trial);
  const size_t index = trials_.size() - 1;
  top_rate_ = std::max(top_rate_, trial.batches_per_s);
  const double best_rate = trials_[best_].batches_per_s;
  const bool gain = trial.batches_per_s > best_rate * (1 + o_.margin);
  switch (phase_) {
    case Phase::kStart:
      best_ = index;
      if (loader_bound(trial) && workers_ < o_.max_workers) {
        phase_ = Phase::kWorkersUp;
      } else if (workers_ > 1) {
        phase_ = Phase::kWorkersDown;
      } else {
        end_workers();
        return;
      }
      break;
    case Phase::kWorkersUp:
      if (gain) {
        best_ = index;
        last_up_step_ = step_;
        step_ *= 2;
      } else if (step_ > 1) {
        step_ = 1;
      } else {
        // No gain one above the best: fewer may be as fast unless the best came one step up.
        if (last_up_step_ == 1) {
          end_workers();
          return;
        }
        phase_ = Phase::kWorkersDown;
      }
      break;
    case Phase::kWorkersDown:
      // Fewer workers are kept unless measurably slower than the fastest setting seen.
      if (trial.batches_per_s >= top_rate_ * (1 - o_.margin)) {
        best_ = index;
        step_ *= 2;
      } else if (step_ > 1) {
        step_ = 1;
      } else {
        end_workers();
        return;
      }
      break;
    case Phase::kPrefetch:
      if (!gain) {
        settle();
        return;
      }
      best_ = index;
      break;
    case Phase::kSettled:
      return;
  }
  next_candidate();
}

void WorkerTuner::next_candidate() {
  while (true) {
    if (trials_.size() >= kMaxTrials) {
      settle();
      return;
    }
    const TuningTrial& best = trials_[best_];
    if (phase_ == Phase::kWorkersUp) {
      if (loader_bound(best) && best.workers < o_.max_workers &&
          try_setting(std::min(best.workers + step_, o_.max_workers), best.prefetch))
        return;
      if (step_ > 1 && loader_bound(best) && best.workers < o_.max_workers) {
        step_ = 1;  // the doubled step was measured already: the next one up
        continue;
      }
      if (last_up_step_ == 1) {
        end_workers();
        return;
      }
      phase_ = Phase::kWorkersDown;
      step_ = 1;
      continue;
    }
    if (phase_ == Phase::kWorkersDown) {
      if (best.workers > 1 && try_setting(std::max(1, best.workers - step_), best.prefetch)) return;
      if (step_ > 1 && best.workers > 1) {
        step_ = 1;
        continue;
      }
      end_workers();
      return;
    }
    if (phase_ == Phase::kPrefetch &&
        try_setting(best.workers, std::min(2 * best.prefetch, o_.max_prefetch)))
      return;
    settle();
    return;
  }
}

void WorkerTuner::end_workers() {
  const TuningTrial& best = trials_[best_];
  if (best.prefetch < o_.max_prefetch && loader_bound(best) && best.busy_fraction < kWorkersIdle) {
    phase_ = Phase::kPrefetch;
    next_candidate();
    return;
  }
  settle();
}

const TuningTrial* WorkerTuner::measured(int workers, int prefetch) const {
  for (const TuningTrial& t : trials_) {
    if (t.workers == workers && t.prefetch == prefetch) return &t;
  }
  return nullptr;
}

bool WorkerTuner::try_setting(int workers, int prefetch) {
  if (workers < 1 || workers > o_.max_workers || prefetch < 1 || prefetch > o_.max_prefetch ||
      measured(workers, prefetch))
    return false;
  workers_ = workers;
  prefetch_ = prefetch;
  skip_ = o_.warmup_batches;
  return true;
}

void WorkerTuner::settle() {
  phase_ = Phase::kSettled;
  workers_ = trials_[best_].workers;
  prefetch_ = trials_[best_].prefetch;
  settle_batches_ = batches_;
}

TuningReport WorkerTuner::report() const {
  TuningReport r;
  r.workers = workers_;
  r.prefetch = prefetch_;
  r.max_workers = o_.max_workers;
  r.max_prefetch = o_.max_prefetch;
  r.settled = settled();
  r.settle_batches = settled() ? settle_batches_ : batches_;
  r.trials = trials_;
  if (trials_.empty()) return r;
  const bool with_prefetch = std::any_of(trials_.begin(), trials_.end(), [&](const TuningTrial& t) {
    return t.prefetch != trials_[0].prefetch;
  });
  const TuningTrial& best = trials_[best_];
  const TuningTrial& start = trials_[0];
  r.reason = fmt::format("{}: {} batches/s", setting_text(best, with_prefetch),
                         rate_text(best.batches_per_s));
  if (best_ == 0) {
    r.reason += " (the start)";
  } else {
    r.reason += fmt::format(" vs {} with {} (the start)", rate_text(start.batches_per_s),
                            setting_text(start, with_prefetch));
  }
  std::string others;
  for (size_t i = 1; i < trials_.size(); ++i) {
    if (i == best_) continue;
    others +=
        fmt::format("{}{} ({})", others.empty() ? "" : ", ",
                    setting_text(trials_[i], with_prefetch), rate_text(trials_[i].batches_per_s));
  }
  if (!others.empty())
    r.reason += fmt::format("; slower or no gain beyond {:.0f}%: {}", 100 * o_.margin, others);
  r.reason +=
      fmt::format("; the consumer waited for data {:.0f}% of its time{}", 100 * best.wait_fraction,
                  loader_bound(best) ? "" : " (the loader is not the bottleneck)");
  return r;
}

std::string TuningReport::summary() const {
  if (!settled) {
    return fmt::format("not settled after {} batches (using {} worker{}, prefetch {}){}",
                       settle_batches, workers, workers == 1 ? "" : "s", prefetch,
                       reason.empty() ? "" : "; so far " + reason);
  }
  return fmt::format("{}; settled after {} batches (prefetch {})", reason, settle_batches,
                     prefetch);
}

std::string TuningReport::to_json() const {
  nlohmann::json j = {{"workers", workers},         {"prefetch", prefetch},
                      {"max_workers", max_workers}, {"max_prefetch", max_prefetch},
                      {"settled", settled},         {"settle_batches", settle_batches},
                      {"reason", reason},           {"trials", nlohmann::json::array()}};
  for (const TuningTrial& t : trials) {
    j["trials"].push_back({{"workers", t.workers},
                           {"prefetch", t.prefetch},
                           {"batches_per_s", t.batches_per_s},
                           {"wait_fraction", t.wait_fraction},
                           {"busy_fraction", t.busy_fraction}});
  }
  return j.dump();
}

}  // namespace stoker
