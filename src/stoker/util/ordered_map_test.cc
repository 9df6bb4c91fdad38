#include "stoker/util/ordered_map.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace stoker {
namespace {

// Items take uneven times so that later ones often finish first.
int slow_square(size_t i) {
  std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 13 * 50));
  return static_cast<int>(i * i);
}

TEST(OrderedMapTest, ResultsAreConsumedInOrderForAnyThreadCount) {
  for (int workers : {1, 2, 5}) {
    for (size_t window : {size_t{1}, size_t{3}, size_t{16}}) {
      std::vector<int> seen;
      std::atomic<bool> bad_worker{false};
      Status status = ordered_map<int>(
          100, workers, window,
          [&](size_t i, int worker) {
            if (worker < 0 || worker >= workers) bad_worker = true;
            return slow_square(i);
          },
          [&](size_t i, int& value) {
            EXPECT_EQ(i, seen.size());
            seen.push_back(value);
            return Status::ok();
          });
      ASSERT_TRUE(status.is_ok()) << status.message();
      ASSERT_EQ(seen.size(), 100u);
      for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int>(i * i));
      EXPECT_FALSE(bad_worker);
    }
  }
}

TEST(OrderedMapTest, NoMoreThanTheWindowIsProducedAheadOfTheConsumer) {
  constexpr size_t kWindow = 4;
  std::atomic<size_t> consumed{0};
  std::atomic<bool> too_far{false};
  Status status = ordered_map<size_t>(
      200, 4, kWindow,
      [&](size_t i, int) {
        // Item i may start only once item i - kWindow - 1 has been taken by the consumer.
        if (i > consumed.load() + kWindow) too_far = true;
        slow_square(i);
        return i;
      },
      [&](size_t i, size_t&) {
        consumed = i + 1;
        return Status::ok();
      });
  ASSERT_TRUE(status.is_ok());
  EXPECT_FALSE(too_far);
}

TEST(OrderedMapTest, AConsumerErrorStopsTheRunAndIsReturned) {
  std::atomic<size_t> produced{0};
  size_t consumed = 0;
  Status status = ordered_map<int>(
      10000, 3, 8,
      [&](size_t i, int) {
        ++produced;
        return static_cast<int>(i);
      },
      [&](size_t i, int&) {
        ++consumed;
        return i == 10 ? corrupt("item ten is bad") : Status::ok();
      });
  EXPECT_EQ(status.code(), StatusCode::kCorrupt);
  EXPECT_EQ(status.message(), "item ten is bad");
  EXPECT_EQ(consumed, 11u);
  EXPECT_LE(produced.load(), 11u + 8u);
}

TEST(OrderedMapTest, AThrowingProducerEndsTheRunWhenItsTurnComes) {
  for (int workers : {1, 3}) {
    size_t consumed = 0;
    Status status = ordered_map<int>(
        50, workers, 4,
        [](size_t i, int) {
          if (i == 7) throw std::runtime_error("boom");
          return static_cast<int>(i);
        },
        [&](size_t, int&) {
          ++consumed;
          return Status::ok();
        });
    EXPECT_EQ(status.code(), StatusCode::kInternal);
    EXPECT_EQ(status.message(), "item 7: boom");
    EXPECT_EQ(consumed, 7u) << "items before the throwing one are all consumed";
  }
}

TEST(OrderedMapTest, EmptyRunsAndBadArguments) {
  int calls = 0;
  const auto produce = [&](size_t, int) { return ++calls; };
  const auto consume = [&](size_t, int&) { return Status::ok(); };
  EXPECT_TRUE(ordered_map<int>(0, 4, 4, produce, consume).is_ok());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(ordered_map<int>(3, 0, 4, produce, consume).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ordered_map<int>(3, 1, 0, produce, consume).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoker
