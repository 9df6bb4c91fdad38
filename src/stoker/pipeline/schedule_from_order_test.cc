// The shard schedule read off an order (schedule_from_order.h) and its next_use
// (store/shard_schedule.h): the worked example of docs/REMOTE-DESIGN.md section 2 by hand,
// then against a brute-force scan of real windowed orders.
#include "stoker/pipeline/schedule_from_order.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "stoker/pipeline/sampler.h"

namespace stoker {
namespace {

// 4 shards of 3 records: shard 0 = records 0-2, 1 = 3-5, 2 = 6-8, 3 = 9-11.
const std::vector<int64_t> kStarts = {0, 3, 6, 9, 12};
// Shards by position: 2 2 0 2 3 0 3 0 1 3 1 1.
const std::vector<int64_t> kOrder = {7, 6, 0, 8, 11, 2, 9, 1, 4, 10, 3, 5};
// Shards by position: 1 1 1 3 3 3 0 0 0 2 2 2.
const std::vector<int64_t> kNextOrder = {3, 4, 5, 9, 10, 11, 0, 1, 2, 6, 7, 8};

TEST(ScheduleFromOrderTest, TheWorkedExampleByHand) {
  const ShardSchedule s = schedule_from_order(5, kOrder, kNextOrder, kStarts);
  EXPECT_EQ(s.epoch, 5);
  EXPECT_EQ(s.epoch_size, 12);
  const std::vector<std::pair<int64_t, int64_t>> now = {{2, 7}, {8, 11}, {0, 3}, {4, 9}};
  const std::vector<std::pair<int64_t, int64_t>> after = {{6, 8}, {0, 2}, {9, 11}, {3, 5}};
  for (int shard = 0; shard < 4; ++shard) {
    EXPECT_EQ(s.now[shard].first, now[shard].first) << shard;
    EXPECT_EQ(s.now[shard].last, now[shard].second) << shard;
    EXPECT_EQ(s.after[shard].first, after[shard].first) << shard;
    EXPECT_EQ(s.after[shard].last, after[shard].second) << shard;
  }
  // Shard 0, used at [2, 7]: later at first, the position itself inside, then e + 1's first.
  EXPECT_EQ(s.next_use(0, 0), 2);
  EXPECT_EQ(s.next_use(0, 2), 2);
  EXPECT_EQ(s.next_use(0, 4), 4);  // live at 4, though position 4 reads shard 3
  EXPECT_EQ(s.next_use(0, 7), 7);
  EXPECT_EQ(s.next_use(0, 8), 12 + 6);
  // Shard 2 ends at 3: from 4 on it is next needed in e + 1, at its 9.
  EXPECT_EQ(s.next_use(2, 3), 3);
  EXPECT_EQ(s.next_use(2, 4), 12 + 9);
  EXPECT_EQ(s.next_use(1, 11), 11);
  // next_read: read whole at the start of a use, so once it began, next in e + 1.
  EXPECT_EQ(s.next_read(0, 0), 2);
  EXPECT_EQ(s.next_read(0, 2), 2);
  EXPECT_EQ(s.next_read(0, 3), 12 + 6);
  EXPECT_EQ(s.next_read(2, 3), 12 + 9);
  // use_ends: after the last use in e (shard 0's 7), then never (its next use stays put).
  EXPECT_EQ(s.use_ends(0, 0), 8);
  EXPECT_EQ(s.use_ends(0, 7), 8);
  EXPECT_EQ(s.use_ends(0, 8), ShardSchedule::kNever);
}

TEST(ScheduleFromOrderTest, AShardOfNoRecordsIsNeverUsed) {
  // Shard 1 is empty: records 0-1 are shard 0, 2-4 shard 2.
  const ShardSchedule s = schedule_from_order(0, {4, 0, 2, 1, 3}, {0, 1, 2, 3, 4}, {0, 2, 2, 5});
  EXPECT_EQ(s.now[1].first, ShardUse::kUnused);
  EXPECT_EQ(s.next_use(1, 0), ShardSchedule::kNever);
  EXPECT_EQ(s.next_read(1, 0), ShardSchedule::kNever);
  EXPECT_EQ(s.now[0].first, 1);
  EXPECT_EQ(s.now[0].last, 3);
  EXPECT_EQ(s.now[2].first, 0);
  EXPECT_EQ(s.now[2].last, 4);
  EXPECT_EQ(s.next_use(0, 4), 5 + 0);
}

TEST(ScheduleFromOrderTest, IntervalsAndNextUseMatchAScanOfTheOrders) {
  const std::vector<int64_t> records = {20, 35, 5, 20, 20, 40, 20, 13};
  std::vector<int64_t> starts = {0};
  for (int64_t c : records) starts.push_back(starts.back() + c);
  const int64_t n = starts.back();
  auto shard_of = [&](int64_t i) {
    int s = 0;
    while (starts[s + 1] <= i) ++s;
    return s;
  };
  SamplerOptions options;
  options.seed = 3;
  options.shuffle_window = 2;
  const Sampler sampler(records, options);
  const std::vector<int64_t> order = sampler.order(4);
  const std::vector<int64_t> next = sampler.order(5);
  const ShardSchedule s = schedule_from_order(4, order, next, starts);
  for (int shard = 0; shard < static_cast<int>(records.size()); ++shard) {
    for (int64_t p = 0; p < n; ++p) {
      // The plain meaning: p while the shard is read at or before and at or after p, else its
      // next read in e, else in e + 1 (counted from N).
      bool before = false;
      for (int64_t q = 0; q <= p; ++q) before = before || shard_of(order[q]) == shard;
      int64_t expected = -1;
      for (int64_t q = p; q < n && expected < 0; ++q) {
        if (shard_of(order[q]) == shard) expected = before ? p : q;
      }
      for (int64_t q = 0; q < n && expected < 0; ++q) {
        if (shard_of(next[q]) == shard) expected = n + q;
      }
      ASSERT_EQ(s.next_use(shard, p), expected) << "shard " << shard << " at " << p;
    }
  }
}

// Orders of samples, 3 a record (a per_record order's, Sampler::samples): the schedule of the
// records they are, as the orders divided would give.
TEST(ScheduleFromOrderTest, SamplesOfSeveralARecordAreTheirRecords) {
  constexpr int64_t kPerRecord = 3;
  std::vector<int64_t> samples, next_samples;
  for (size_t p = 0; p < kOrder.size(); ++p) {
    samples.push_back(kOrder[p] * kPerRecord + static_cast<int64_t>(p % kPerRecord));
    next_samples.push_back(kNextOrder[p] * kPerRecord + static_cast<int64_t>(p * 7 % kPerRecord));
  }
  const ShardSchedule expected = schedule_from_order(1, kOrder, kNextOrder, kStarts);
  const ShardSchedule s = schedule_from_order(1, samples, next_samples, kStarts, kPerRecord);
  ASSERT_EQ(s.now.size(), expected.now.size());
  for (size_t shard = 0; shard < s.now.size(); ++shard) {
    EXPECT_EQ(s.now[shard].first, expected.now[shard].first) << shard;
    EXPECT_EQ(s.now[shard].last, expected.now[shard].last) << shard;
    EXPECT_EQ(s.after[shard].first, expected.after[shard].first) << shard;
    EXPECT_EQ(s.after[shard].last, expected.after[shard].last) << shard;
  }
}

}  // namespace
}  // namespace stoker
