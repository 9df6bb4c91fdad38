// WorkerTuner on synthetic rate functions: a simulated loader whose batch rate is a function of
// the active workers and the prefetch depth, the consumer limited by its own compute rate.
#include "stoker/pipeline/worker_tuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "stoker/util/status.h"

namespace stoker {
namespace {

// A loader building `loader(w, p)` batches/s with w workers and a window of p, feeding a
// consumer that computes at most `consumer(w)` batches/s (fewer with more workers when they
// take its CPU). Each batch's time varies by up to ±noise.
struct Simulation {
  std::function<double(int, int)> loader;
  std::function<double(int)> consumer = [](int) { return 1e9; };
  double noise = 0;
  // The rate the consumer sees.
  double rate(int w, int p) const { return std::min(loader(w, p), consumer(w)); }
};

TunerOptions options(int start, int max, int start_prefetch = 4, int max_prefetch = 4) {
  TunerOptions o;
  o.start_workers = start;
  o.max_workers = max;
  o.start_prefetch = start_prefetch;
  o.max_prefetch = max_prefetch;
  o.min_window_seconds = 0;
  return o;
}

// Feeds the tuner batches of the simulation until it settles or `limit` batches were taken.
TuningReport run(const TunerOptions& o, const Simulation& sim, uint32_t seed = 1,
                 int64_t limit = 10000, int64_t pause_every = 0) {
  WorkerTuner tuner(o);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(-sim.noise, sim.noise);
  LoaderCounters c;
  for (int64_t b = 0; b < limit && !tuner.settled(); ++b) {
    const int w = tuner.workers();
    const int p = tuner.prefetch();
    const double seconds = 1 / (sim.rate(w, p) * (1 + jitter(rng)));
    const double loader_rate = sim.loader(w, p);
    c.seconds += seconds;
    if (loader_rate < sim.consumer(w))
      c.wait_seconds += seconds * (1 - loader_rate / sim.consumer(w));
    // The workers are busy for the batches they build, out of the most they could build.
    c.busy_seconds += seconds * w * std::min(1.0, sim.rate(w, p) / sim.loader(w, 1 << 20));
    tuner.on_batch(c);
    if (pause_every > 0 && b % pause_every == 0) {
      tuner.pause();
      c.seconds += 100;  // an evaluation: not measured
    }
  }
  return tuner.report();
}

// The best rate over every setting within the budgets.
double best_rate(const TunerOptions& o, const Simulation& sim) {
  double best = 0;
  for (int w = 1; w <= o.max_workers; ++w) {
    for (int p = o.start_prefetch; p <= o.max_prefetch; p *= 2)
      best = std::max(best, sim.rate(w, p));
  }
  return best;
}

Simulation saturating(int cores) {
  return {[cores](int w, int) { return 100.0 * std::min(w, cores); }};
}

TEST(WorkerTunerTest, MonotoneRateTakesEveryWorker) {
  for (int max : {1, 2, 3, 8, 16}) {
    const TuningReport r = run(options(1, max), {[](int w, int) { return 100.0 * w; }});
    EXPECT_TRUE(r.settled) << max;
    EXPECT_EQ(r.workers, max);
    EXPECT_LE(r.settle_batches, 120) << max;
  }
}

TEST(WorkerTunerTest, SaturatingRateTakesTheFewestWorkersAtTheTop) {
  for (int cores : {1, 2, 3, 5}) {
    const TunerOptions o = options(1, 8);
    const TuningReport r = run(o, saturating(cores));
    EXPECT_TRUE(r.settled);
    EXPECT_EQ(r.workers, cores);
    EXPECT_LE(r.settle_batches, 130) << cores;
  }
}

TEST(WorkerTunerTest, PeakInTheMiddleIsFoundFromBelowAndAbove) {
  const std::vector<double> rates = {0, 100, 180, 240, 200, 150, 120, 100, 90};
  const Simulation sim{[&](int w, int) { return rates[w]; }};
  for (int start : {1, 2, 4, 7, 8}) {
    const TuningReport r = run(options(start, 8), sim);
    EXPECT_TRUE(r.settled);
    EXPECT_EQ(r.workers, 3) << start;
    EXPECT_LE(r.settle_batches, 130) << start;
  }
}

TEST(WorkerTunerTest, NoisyRatesEndWithinTenPercentOfTheBest) {
  const std::vector<double> peak = {0, 100, 180, 240, 200, 150, 120, 100, 90};
  std::vector<Simulation> sims = {
      {[](int w, int) { return 100.0 * w; }},
      saturating(2),
      saturating(3),
      {[&](int w, int) { return peak[w]; }},
  };
  for (Simulation& sim : sims) sim.noise = 0.03;
  for (size_t s = 0; s < sims.size(); ++s) {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      const TunerOptions o = options(1, 8);
      const TuningReport r = run(o, sims[s], seed);
      EXPECT_TRUE(r.settled);
      EXPECT_GE(sims[s].rate(r.workers, r.prefetch), 0.9 * best_rate(o, sims[s]))
          << "simulation " << s << " seed " << seed << ": " << r.reason;
      EXPECT_LE(r.settle_batches, 16 * 16 + 4);
    }
  }
}

TEST(WorkerTunerTest, ConsumerThatNeverWaitsGetsFewerWorkers) {
  // Compute-bound: the loader is far ahead, and each worker takes 10% of the consumer's CPU.
  Simulation sim{[](int w, int) { return 1000.0 * w; },
                 [](int w) { return 500.0 / (1 + 0.1 * (w - 1)); }};
  const TuningReport r = run(options(4, 8), sim);
  EXPECT_TRUE(r.settled);
  EXPECT_EQ(r.workers, 1);
  EXPECT_NE(r.reason.find("the loader is not the bottleneck"), std::string::npos) << r.reason;
  // Workers that cost nothing: still no more than the start, and fewer when just as fast.
  sim.consumer = [](int) { return 500.0; };
  const TuningReport free = run(options(2, 8), sim);
  EXPECT_EQ(free.workers, 1);
  EXPECT_EQ(free.trials.size(), 2u);
}

TEST(WorkerTunerTest, DeeperWindowWhenWorkersIdleWhileTheConsumerWaits) {
  // One worker that idles on a small window: the rate grows with the window up to 8.
  const Simulation sim{[](int w, int p) { return 100.0 * w * std::min(1.0, p / 8.0); }};
  const TuningReport r = run(options(1, 1, 2, 64), sim);
  EXPECT_TRUE(r.settled);
  EXPECT_EQ(r.workers, 1);
  EXPECT_EQ(r.prefetch, 8);
  EXPECT_NE(r.reason.find("prefetch 8"), std::string::npos) << r.reason;
  // Without room for a deeper window (or with busy workers) the depth is not touched.
  EXPECT_EQ(run(options(1, 1, 2, 2), sim).prefetch, 2);
  EXPECT_EQ(run(options(1, 4, 4, 64), saturating(4)).prefetch, 4);
}

TEST(WorkerTunerTest, PausesAreNotMeasured) {
  // Every 5th batch is followed by a 100 s pause; measured, they would make every rate ~0.
  const TuningReport r = run(options(1, 8), saturating(3), 1, 10000, 5);
  EXPECT_TRUE(r.settled);
  EXPECT_EQ(r.workers, 3);
  for (const TuningTrial& t : r.trials) EXPECT_GT(t.batches_per_s, 50);
}

TEST(WorkerTunerTest, SettledStaysAndReportsWhy) {
  WorkerTuner tuner(options(1, 2));
  LoaderCounters c;
  int changes = 0;
  while (!tuner.settled()) {
    c.seconds += 1.0 / (100.0 * tuner.workers());
    c.wait_seconds += 0.5 / (100.0 * tuner.workers());
    changes += tuner.on_batch(c);
  }
  EXPECT_EQ(changes, 1);  // 1 -> 2 workers, kept
  const TuningReport before = tuner.report();
  for (int i = 0; i < 100; ++i) {
    c.seconds += 1;  // slow now: a settled tuner does not look again
    EXPECT_FALSE(tuner.on_batch(c));
  }
  const TuningReport r = tuner.report();
  EXPECT_EQ(r.workers, 2);
  EXPECT_EQ(r.settle_batches, before.settle_batches);
  ASSERT_EQ(r.trials.size(), 2u);
  EXPECT_EQ(r.reason.rfind("2 workers: 200 batches/s vs 100 with 1 worker (the start)", 0), 0u)
      << r.reason;
  EXPECT_NE(r.reason.find("waited for data 50%"), std::string::npos) << r.reason;
  EXPECT_EQ(r.summary(), r.reason + "; settled after " + std::to_string(r.settle_batches) +
                             " batches (prefetch 4)");
  const nlohmann::json j = nlohmann::json::parse(r.to_json());
  EXPECT_EQ(j["workers"], 2);
  EXPECT_EQ(j["settled"], true);
  EXPECT_EQ(j["settle_batches"], r.settle_batches);
  EXPECT_EQ(j["reason"], r.reason);
  ASSERT_EQ(j["trials"].size(), 2u);
  EXPECT_EQ(j["trials"][1]["workers"], 2);
  EXPECT_DOUBLE_EQ(j["trials"][0]["batches_per_s"].get<double>(), r.trials[0].batches_per_s);
}

TEST(WorkerTunerTest, ReportsRatesOf1000AndMoreWithThousandsSeparators) {
  WorkerTuner tuner(options(1, 2));
  LoaderCounters c;
  while (!tuner.settled()) {
    c.seconds += 1.0 / (1234567.0 * tuner.workers());
    c.wait_seconds += 0.5 / (1234567.0 * tuner.workers());
    tuner.on_batch(c);
  }
  const std::string reason = tuner.report().reason;
  EXPECT_EQ(reason.rfind("2 workers: 2,469,134 batches/s vs 1,234,567 with 1 worker", 0), 0u)
      << reason;
}

TEST(WorkerTunerTest, ReportBeforeAnyMeasurementIsTheStart) {
  WorkerTuner tuner(options(3, 4, 8, 16));
  const TuningReport r = tuner.report();
  EXPECT_FALSE(r.settled);
  EXPECT_EQ(r.workers, 3);
  EXPECT_EQ(r.prefetch, 8);
  EXPECT_TRUE(r.trials.empty());
  EXPECT_EQ(r.reason, "");
  EXPECT_EQ(r.summary(), "not settled after 0 batches (using 3 workers, prefetch 8)");
}

TEST(WorkerTunerTest, RejectsBadOptions) {
  EXPECT_THROW(WorkerTuner(options(0, 4)), Error);
  EXPECT_THROW(WorkerTuner(options(5, 4)), Error);
  EXPECT_THROW(WorkerTuner(options(1, 4, 8, 4)), Error);
  TunerOptions o = options(1, 4);
  o.window_batches = 0;
  EXPECT_THROW(WorkerTuner{o}, Error);
  o = options(1, 4);
  o.margin = 1;
  EXPECT_THROW(WorkerTuner{o}, Error);
}

}  // namespace
}  // namespace stoker
