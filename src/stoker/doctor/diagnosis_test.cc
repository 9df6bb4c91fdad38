#include "stoker/doctor/diagnosis.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

constexpr int64_t kUs = 1'000;  // nanoseconds

// The split of a synthetic trace of 100 batches, each waiting `data_us` for the loader, then
// `h2d_us` making its input, then forward, backward and optimizer of `compute_us` in all.
StepSplit synthetic_loop(int64_t data_us, int64_t h2d_us, int64_t compute_us) {
  Tracer tracer;
  int64_t t = 0;
  for (int b = 0; b < 100; ++b) {
    tracer.complete("train", "data", t, t + data_us * kUs);
    t += data_us * kUs;
    tracer.complete("train", "h2d", t, t + h2d_us * kUs);
    t += h2d_us * kUs;
    tracer.complete("train", "forward", t, t + compute_us * kUs / 2);
    t += compute_us * kUs / 2;
    tracer.complete("train", "backward", t, t + compute_us * kUs / 4);
    t += compute_us * kUs / 4;
    tracer.complete("train", "optimizer", t, t + compute_us * kUs / 4);
    t += compute_us * kUs / 4;
  }
  return split_steps(tracer.snapshot(), 0, t);
}

// A run on a 2-core CPU with one worker and one compute thread, measured as given (rates in
// batches per second).
DoctorMeasurements measured(StepSplit loop, double loader_rate, double compute_rate) {
  DoctorMeasurements m;
  m.loop = loop;
  m.loader_rate = loader_rate;
  m.compute_rate = compute_rate;
  m.worker_seconds_per_batch = 1 / loader_rate;
  m.workers = 1;
  m.cores = 2;
  m.compute_threads = 1;
  return m;
}

TEST(DiagnosisTest, ALoopWaitingForDataIsDataBoundAndMoreWorkersComeFirst) {
  // 800 us of compute, 4,000 us waiting: the loader alone makes 208 batches/s.
  const DoctorMeasurements m = measured(synthetic_loop(4000, 50, 800), 208, 1250);
  const Diagnosis d = diagnose(m);
  EXPECT_EQ(d.verdict, Verdict::kDataBound);
  EXPECT_STREQ(to_string(d.verdict), "data-bound");
  EXPECT_NEAR(d.wait_fraction, 4000.0 / 4850, 1e-9);
  EXPECT_NEAR(d.loop_rate, 1e6 / 4850, 1e-6);
  EXPECT_NE(d.reason.find("82.5%"), std::string::npos) << d.reason;
  ASSERT_FALSE(d.actions.empty());
  EXPECT_EQ(d.actions[0].action, "--workers 2");
  // Two workers would double the loader (416 batches/s, under the 1,176 the loop could take),
  // but the 2 cores hold only 2 / (4.8 ms of workers + 0.85 ms of training) per second.
  EXPECT_NEAR(d.actions[0].speedup, 2 / (1.0 / 208 + 850e-6) / d.loop_rate, 1e-9);
  EXPECT_FALSE(d.actions[0].upper_bound);
  EXPECT_NE(
      d.actions[0].why.find("but the 2 cores, shared with 1 compute thread, allow 353.5 batches/s"),
      std::string::npos)
      << d.actions[0].why;
}

TEST(DiagnosisTest, MoreWorkersAreCappedByWhatComputeCanTake) {
  DoctorMeasurements m = measured(synthetic_loop(1000, 0, 1000), 500, 1000);
  m.cores = 16;
  m.compute_threads = 4;
  const Diagnosis d = diagnose(m);
  ASSERT_EQ(d.verdict, Verdict::kDataBound);
  // The loop could take 1,000 batches/s: two workers' 1,000 are enough, not sixteen.
  EXPECT_EQ(d.actions[0].action, "--workers 2");
  EXPECT_NEAR(d.actions[0].speedup, 2.0, 1e-9);
  EXPECT_EQ(d.actions[0].why.find("cores"), std::string::npos);
}

TEST(DiagnosisTest, WithoutWorkersTheFirstMovesBatchesOffTheTrainingThread) {
  DoctorMeasurements m = measured(synthetic_loop(2000, 0, 1000), 500, 1000);
  m.workers = 0;
  const Diagnosis d = diagnose(m);
  ASSERT_EQ(d.verdict, Verdict::kDataBound);
  EXPECT_EQ(d.actions[0].action, "--workers 1");
  EXPECT_NEAR(d.actions[0].speedup, 500 / d.loop_rate, 1e-9);
}

TEST(DiagnosisTest, WithEveryCoreAWorkerTheSamplesMustGetCheaper) {
  DoctorMeasurements m = measured(synthetic_loop(3000, 0, 1000), 250, 1000);
  m.workers = 2;
  m.encoded_images = true;
  m.dct_scaling = false;
  m.verify_always = true;
  m.sample_cost_us = 10;
  m.batch_size = 64;
  m.worker_seconds_per_batch = 8e-3;
  const Diagnosis d = diagnose(m);
  ASSERT_EQ(d.verdict, Verdict::kDataBound);
  std::vector<std::string> actions;
  for (const DoctorAction& a : d.actions) actions.push_back(a.action);
  ASSERT_EQ(actions.size(), 4u);
  for (const std::string& a : actions) EXPECT_EQ(a.find("--workers"), std::string::npos) << a;
  // Upper bounds (the loop without its wait: 4x), then the synthetic cost, last.
  EXPECT_TRUE(d.actions[0].upper_bound);
  EXPECT_NEAR(d.actions[0].speedup, 4.0, 1e-9);
  EXPECT_EQ(d.actions[0].expected_gain(), "up to 4.00x");
  EXPECT_NE(d.actions[0].why.find("125 us of worker time"), std::string::npos) << d.actions[0].why;
  EXPECT_EQ(actions.back(), "leave out --sample-cost-us");
  // 640 us of 8 ms is synthetic: the loader would make 250 / 0.92 batches/s.
  EXPECT_NEAR(d.actions.back().speedup, (250 / 0.92) / 250, 1e-9);
}

TEST(DiagnosisTest, CheaperSamplesOnlyWhenMoreWorkersCannotKeepUp) {
  // 16 cores, 1 worker: 3 workers give the loop all it could take, so images are not the
  // action; the same on 2 cores, where the cores cap the workers, makes them one.
  DoctorMeasurements m = measured(synthetic_loop(2000, 0, 1000), 400, 1000);
  m.encoded_images = true;
  m.cores = 16;
  Diagnosis d = diagnose(m);
  ASSERT_EQ(d.actions.size(), 1u);
  EXPECT_EQ(d.actions[0].action, "--workers 3");
  m.cores = 2;
  d = diagnose(m);
  ASSERT_EQ(d.actions.size(), 3u);
  EXPECT_EQ(d.actions[0].action, "--workers 2");
  EXPECT_EQ(d.actions[1].action, "--dct-scaling");  // the fast mode, not on by default
  EXPECT_NE(d.actions[2].action.find("--max-side"), std::string::npos);
  // Already in the fast mode: not suggested again.
  m.dct_scaling = true;
  d = diagnose(m);
  ASSERT_EQ(d.actions.size(), 2u);
  EXPECT_NE(d.actions[1].action.find("--max-side"), std::string::npos);
}

TEST(DiagnosisTest, GainsUnderNoiseAreNoActions) {
  // Balanced (headroom 1.3), the loop waits 2%: a faster loader, the synthetic cost left out,
  // or a probe of 1.01x would each gain under 3%.
  DoctorMeasurements m = measured(synthetic_loop(20, 0, 1000), 1300, 1000);
  m.probes = {{"--batch 128", "twice the batch", 1.01}};
  m.sample_cost_us = 1;
  m.batch_size = 64;
  const Diagnosis d = diagnose(m);
  EXPECT_EQ(d.verdict, Verdict::kBalanced);
  EXPECT_TRUE(d.actions.empty()) << d.actions[0].action;
  // The same probe at 1.5x is one.
  m.probes[0].speedup = 1.5;
  ASSERT_EQ(diagnose(m).actions.size(), 1u);
  EXPECT_EQ(diagnose(m).actions[0].action, "--batch 128");
}

TEST(DiagnosisTest, AnAlmostDeadLoaderAsksForEveryCoreNotAnOverflow) {
  // Each batch waits 1e5 s for a loader of 1e-5 batches/s while compute takes 10 us: the
  // workers it would take, 1e5 / 1e-5 = 1e10, are beyond an int, so they are clamped to the
  // cores before the cast; 64 of them make the loop 64 times as fast.
  DoctorMeasurements m = measured(synthetic_loop(100'000'000'000, 0, 10), 1e-5, 100'000);
  m.cores = 64;
  m.worker_seconds_per_batch = 1;
  const Diagnosis d = diagnose(m);
  EXPECT_EQ(d.verdict, Verdict::kDataBound);
  ASSERT_FALSE(d.actions.empty());
  EXPECT_EQ(d.actions[0].action, "--workers 64");
  EXPECT_NEAR(d.actions[0].speedup, 64, 0.01);
}

TEST(DiagnosisTest, ALoaderSlowerThanComputeIsDataBoundEvenWithoutWaits) {
  // A loop that happened not to wait (a full prefetch window), but the loader alone is slow.
  const Diagnosis d = diagnose(measured(synthetic_loop(10, 0, 1000), 700, 1000));
  EXPECT_EQ(d.verdict, Verdict::kDataBound);
}

TEST(DiagnosisTest, ALoaderFastEnoughThatStillMakesTheLoopWaitIsTuned) {
  // The loader alone makes 2,000 batches/s, the loop could take 1,000, yet waits 30%.
  DoctorMeasurements m = measured(synthetic_loop(430, 0, 1000), 2000, 1000);
  m.cores = 1;  // no core left for another worker
  Diagnosis d = diagnose(m);
  ASSERT_EQ(d.verdict, Verdict::kDataBound);
  ASSERT_EQ(d.actions.size(), 1u);
  EXPECT_EQ(d.actions[0].action, "--workers auto");
  EXPECT_TRUE(d.actions[0].upper_bound);
  EXPECT_NEAR(d.actions[0].speedup, 1430.0 / 1000, 1e-9);
  m.tuned = true;  // already tuned: nothing more from the loader's side
  EXPECT_TRUE(diagnose(m).actions.empty());
}

TEST(DiagnosisTest, ALoaderWithRoomToSpareIsComputeBound) {
  DoctorMeasurements m = measured(synthetic_loop(20, 30, 1000), 40'000, 1000);
  m.probes = {{"--batch 128", "twice the batch", 1.5},
              {"--threads 2", "two compute threads", 1.01},
              {"--amp bf16", "bfloat16", 0.6}};
  const Diagnosis d = diagnose(m);
  EXPECT_EQ(d.verdict, Verdict::kComputeBound);
  EXPECT_NEAR(d.headroom, 40.0, 1e-9);
  EXPECT_NE(d.reason.find("40.0x"), std::string::npos) << d.reason;
  // Only the probe that helps beyond noise; its gain weighted by compute's share of the loop.
  ASSERT_EQ(d.actions.size(), 1u);
  EXPECT_EQ(d.actions[0].action, "--batch 128");
  const double share = 1000.0 / 1050;
  EXPECT_NEAR(d.actions[0].speedup, 1 / ((1 - share) + share / 1.5), 1e-9);
}

TEST(DiagnosisTest, CloseCapacitiesAreBalanced) {
  DoctorMeasurements m = measured(synthetic_loop(120, 10, 1000), 1200, 1000);
  m.probes = {{"--batch 128", "twice the batch", 1.2}};
  const Diagnosis d = diagnose(m);
  EXPECT_EQ(d.verdict, Verdict::kBalanced);
  // Both sides' actions, the larger predicted gain first: the loop could take only 990
  // batches/s without waiting (1.12x), while the bigger batch's 1.2x applies to 88% of it.
  // Last, an upper bound: the loader alone is fast enough (1,200 batches/s), yet the loop waits.
  ASSERT_EQ(d.actions.size(), 3u);
  EXPECT_EQ(d.actions[0].action, "--batch 128");
  EXPECT_EQ(d.actions[1].action, "--workers 2");
  EXPECT_GT(d.actions[0].speedup, d.actions[1].speedup);
  EXPECT_EQ(d.actions[2].action, "--workers auto");
}

TEST(DiagnosisTest, WaitingBetweenTheThresholdsIsBalanced) {
  // The loader has room alone, yet the loop waits 15%: they compete for the cores.
  EXPECT_EQ(classify(measured(synthetic_loop(150, 0, 850), 10'000, 1200)), Verdict::kBalanced);
}

TEST(DiagnosisTest, MakingTheInputDominatingIsTransferBound) {
  DoctorMeasurements m = measured(synthetic_loop(100, 600, 1000), 10'000, 1000);
  const Diagnosis d = diagnose(m);
  EXPECT_EQ(d.verdict, Verdict::kTransferBound);
  ASSERT_EQ(d.actions.size(), 1u);
  EXPECT_EQ(d.actions[0].action, "--threads 2");
  EXPECT_NEAR(d.actions[0].speedup, 1700.0 / 1100, 1e-9);
  m.cuda = true;
  const Diagnosis cuda = diagnose(m);
  ASSERT_EQ(cuda.actions.size(), 1u);
  EXPECT_NE(cuda.actions[0].action.find("--image-size"), std::string::npos);
}

TEST(DiagnosisTest, TransferBelowTheWaitForDataIsNotTransferBound) {
  EXPECT_EQ(classify(measured(synthetic_loop(700, 600, 1000), 10'000, 1000)), Verdict::kDataBound);
}

TEST(DiagnosisTest, TheThresholdsAreWhereTheContractSays) {
  // Wait just over 20% of the loop: data-bound; just under: not.
  EXPECT_EQ(classify(measured(synthetic_loop(201, 0, 799), 10'000, 1000)), Verdict::kDataBound);
  EXPECT_EQ(classify(measured(synthetic_loop(199, 0, 801), 10'000, 1000)), Verdict::kBalanced);
  // Headroom 1.5 with little wait: compute-bound; below: balanced.
  EXPECT_EQ(classify(measured(synthetic_loop(10, 0, 990), 1501, 1000)), Verdict::kComputeBound);
  EXPECT_EQ(classify(measured(synthetic_loop(10, 0, 990), 1499, 1000)), Verdict::kBalanced);
}

TEST(DiagnosisTest, AnEmptyMeasurementIsBalancedWithoutDividingByZero) {
  const Diagnosis d = diagnose(DoctorMeasurements{});
  EXPECT_EQ(d.loop_rate, 0);
  EXPECT_EQ(d.wait_fraction, 0);
  // No rates at all read as a loader that delivers nothing: data-bound.
  EXPECT_EQ(d.verdict, Verdict::kDataBound);
}

}  // namespace
}  // namespace stoker
