#include "stoker/cache/prefetch_depth.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

PrefetchInputs measured(double download_s, double read_s) {
  PrefetchInputs in;
  in.shard_bytes = 64e6;
  in.shard_records = 1000;
  in.stream_bytes_per_s = in.shard_bytes / download_s;
  in.records_per_s = in.shard_records / read_s;
  return in;
}

TEST(RateMeterTest, StartsAtTheFirstSampleThenWeighsEachNewOne) {
  RateMeter meter(0.25);
  EXPECT_EQ(meter.per_second(), 0);
  meter.add(100, 2);
  EXPECT_DOUBLE_EQ(meter.per_second(), 50);
  meter.add(90, 1);
  EXPECT_DOUBLE_EQ(meter.per_second(), 0.25 * 90 + 0.75 * 50);
  meter.add(5, 0);  // no time: no sample
  meter.add(-1, 1);
  EXPECT_DOUBLE_EQ(meter.per_second(), 0.25 * 90 + 0.75 * 50);
}

TEST(PrefetchMeterTest, MeasuresThePaceOverSpansOfATenthOfASecondAndEachDownload) {
  constexpr int64_t kMs = 1'000'000;
  PrefetchMeter meter;
  meter.moved(5, 0);  // the first move starts the span
  EXPECT_EQ(meter.pace(), 0);
  meter.moved(9, 50 * kMs);  // within the span: no sample
  EXPECT_EQ(meter.pace(), 0);
  meter.moved(25, 200 * kMs);
  EXPECT_DOUBLE_EQ(meter.pace(), 20 / 0.2);
  meter.restart(0, 1000 * kMs);  // a new plan from its start
  meter.moved(10, 1100 * kMs);
  EXPECT_DOUBLE_EQ(meter.pace(), 0.3 * 100 + 0.7 * 100);
  meter.moved(10, 1300 * kMs);  // no move: no sample
  EXPECT_DOUBLE_EQ(meter.pace(), 100);
  EXPECT_EQ(meter.bytes_per_s(), 0);
  meter.downloaded(4e6, 2);
  const PrefetchInputs in = meter.inputs(8e6, 1, 3);
  EXPECT_DOUBLE_EQ(in.stream_bytes_per_s, 2e6);
  EXPECT_DOUBLE_EQ(in.records_per_s, 100);
  EXPECT_DOUBLE_EQ(in.shard_bytes, 8e6);
  EXPECT_DOUBLE_EQ(in.shard_records, 1);
  EXPECT_EQ(in.max_streams, 3);
  EXPECT_EQ(meter.inputs(8e6, 1, 1).min_streams, 1) << "at most the most streams";
}

TEST(PrefetchDepthTest, UnmeasuredGivesTheDefault) {
  PrefetchInputs in = measured(1, 1);
  in.stream_bytes_per_s = 0;
  EXPECT_EQ(prefetch_depth(in), 4);
  in = measured(1, 1);
  in.records_per_s = 0;
  in.unmeasured_depth = 7;
  EXPECT_EQ(prefetch_depth(in), 7);
}

TEST(PrefetchDepthTest, CoversOneDownloadAtTheLoadersPaceWithAMargin) {
  EXPECT_EQ(prefetch_depth(measured(0.01, 1)), 2) << "a fast network: one shard past the next";
  EXPECT_EQ(prefetch_depth(measured(1, 1)), 3);
  EXPECT_EQ(prefetch_depth(measured(2, 1)), 4);
  EXPECT_EQ(prefetch_depth(measured(10, 1)), 16);
  EXPECT_EQ(prefetch_depth(measured(1000, 1)), 64) << "bounded";
}

TEST(PrefetchDepthTest, GrowsWithTheDownloadTimeAndShrinksWithTheReadTime) {
  int last = 0;
  for (double download_s = 0.001; download_s < 100; download_s *= 1.7) {
    const int depth = prefetch_depth(measured(download_s, 1));
    EXPECT_GE(depth, last) << download_s;
    EXPECT_GE(depth, 1);
    EXPECT_LE(depth, 64);
    last = depth;
  }
  last = 1 << 30;
  for (double read_s = 0.001; read_s < 100; read_s *= 1.7) {
    const int depth = prefetch_depth(measured(1, read_s));
    EXPECT_LE(depth, last) << read_s;
    last = depth;
  }
}

TEST(DownloadStreamsTest, TheMinimumUntilMeasured) {
  EXPECT_EQ(download_streams(PrefetchInputs()), 2);
  PrefetchInputs only_bandwidth = measured(1, 1);
  only_bandwidth.records_per_s = 0;
  EXPECT_EQ(download_streams(only_bandwidth), 2);
}

TEST(DownloadStreamsTest, CarryOneAndAHalfTimesWhatTheLoaderReads) {
  // The loader reads a shard in 1 s; one stream downloads one in 1, 2, 4 or 100 s.
  EXPECT_EQ(download_streams(measured(0.1, 1)), 2) << "fast downloads: the minimum";
  EXPECT_EQ(download_streams(measured(2, 1)), 3);
  EXPECT_EQ(download_streams(measured(4, 1)), 6);
  EXPECT_EQ(download_streams(measured(100, 1)), 8) << "the maximum";
  // Starved: the loader reads at what 3 streams bring, so 1.5 x 3 are asked for, rounded up.
  EXPECT_EQ(download_streams(measured(3, 1)), 5);
}

TEST(DownloadStreamsTest, AsManyAsTheCacheHoldsBesideTheFloor) {
  // Shards of at most 100 bytes; the loader needs 300 at once.
  EXPECT_EQ(streams_that_fit(1000, 300, 100, 8), 7);
  EXPECT_EQ(streams_that_fit(1099, 300, 100, 8), 7) << "whole shards only";
  EXPECT_EQ(streams_that_fit(10'000, 300, 100, 8), 8) << "the maximum";
  EXPECT_EQ(streams_that_fit(450, 300, 100, 8), 1) << "at least one";
  EXPECT_EQ(streams_that_fit(300, 300, 100, 8), 1);
}

}  // namespace
}  // namespace stoker
