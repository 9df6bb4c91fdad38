#include "stoker/util/mapping_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/mapped_file.h"

namespace stoker {
namespace {

// Stand-ins for mappings: the registry only compares addresses.
char ranges[64][16];

TEST(MappingRegistryTest, FindsTheRangeThatHoldsAnAddress) {
  ASSERT_TRUE(register_mapping(ranges[0], 16, "/data/a.stk"));
  ASSERT_TRUE(register_mapping(ranges[1], 8, "/data/b.stk"));
  EXPECT_STREQ(mapped_path_at(ranges[0]), "/data/a.stk");
  EXPECT_STREQ(mapped_path_at(&ranges[0][15]), "/data/a.stk");
  EXPECT_STREQ(mapped_path_at(&ranges[1][7]), "/data/b.stk");
  EXPECT_EQ(mapped_path_at(&ranges[1][8]), nullptr);  // one past b's end
  EXPECT_EQ(mapped_path_at(ranges[2]), nullptr);

  unregister_mapping(ranges[0]);
  EXPECT_EQ(mapped_path_at(&ranges[0][3]), nullptr);
  EXPECT_STREQ(mapped_path_at(ranges[1]), "/data/b.stk");
  unregister_mapping(ranges[0]);  // no longer registered: nothing happens
  unregister_mapping(ranges[1]);
  EXPECT_EQ(mapped_path_at(ranges[1]), nullptr);
}

TEST(MappingRegistryTest, AMappingMarkedChangedStaysSoUntilUnregistered) {
  ASSERT_TRUE(register_mapping(ranges[3], 16, "/data/c.stk"));
  ASSERT_TRUE(register_mapping(ranges[4], 16, "/data/d.stk"));
  EXPECT_EQ(changed_mappings(), 0u);
  const void* base = nullptr;
  size_t size = 0;
  EXPECT_STREQ(mark_changed_at(&ranges[3][9], &base, &size), "/data/c.stk");
  EXPECT_EQ(base, ranges[3]);
  EXPECT_EQ(size, 16u);
  EXPECT_STREQ(mark_changed_at(&ranges[3][2], &base, &size), "/data/c.stk");  // counted once
  EXPECT_EQ(changed_mappings(), 1u);
  EXPECT_TRUE(mapping_changed_at(&ranges[3][15]));
  EXPECT_FALSE(mapping_changed_at(ranges[4]));
  EXPECT_EQ(mark_changed_at(ranges[5], &base, &size), nullptr);  // not registered
  unregister_mapping(ranges[3]);
  EXPECT_EQ(changed_mappings(), 0u);
  ASSERT_TRUE(register_mapping(ranges[3], 16, "/data/e.stk"));  // a new mapping starts unchanged
  EXPECT_FALSE(mapping_changed_at(ranges[3]));
  unregister_mapping(ranges[3]);
  unregister_mapping(ranges[4]);
}

TEST(MappingRegistryTest, AFullTableRefusesAndAFreedSlotIsReused) {
  std::vector<char> bytes(kMappingRegistrySlots + 1);
  size_t registered = 0;
  while (registered < bytes.size() && register_mapping(&bytes[registered], 1, "x")) ++registered;
  EXPECT_EQ(registered, kMappingRegistrySlots);
  unregister_mapping(&bytes[7]);
  EXPECT_TRUE(register_mapping(&bytes[registered], 1, "last"));
  EXPECT_STREQ(mapped_path_at(&bytes[registered]), "last");
  EXPECT_EQ(mapped_path_at(&bytes[7]), nullptr);
  for (size_t i = 0; i <= registered; ++i) unregister_mapping(&bytes[i]);
  EXPECT_EQ(mapped_path_at(&bytes[registered]), nullptr);
}

TEST(MappingRegistryTest, MappedFileRegistersWhileItIsMapped) {
  testing::TempDir dir;
  const std::string path = dir / "f";
  ASSERT_TRUE(write_file_atomically(path, "0123456789").is_ok());
  MappedFile file = MappedFile::open(path).value_or_throw();
  const uint8_t* data = file.data();
  EXPECT_STREQ(mapped_path_at(data + 9), path.c_str());
  MappedFile moved = std::move(file);  // the mapping stays where it was
  EXPECT_STREQ(mapped_path_at(data), path.c_str());
  moved = MappedFile();
  EXPECT_EQ(mapped_path_at(data), nullptr);
}

// Threads register, look up and unregister the first 12 bytes of their own ranges while a
// scanner looks up the byte after each: every thread always finds its own live range and never
// a dropped one, and the scanner never finds a range that does not hold its address.
TEST(MappingRegistryTest, ConcurrentRegistrationsAndLookups) {
  constexpr int kThreads = 8;
  constexpr int kRangesPerThread = 8;
  constexpr int kRounds = 100;
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::thread scanner([&] {
    while (!done.load()) {
      for (auto& range : ranges) {
        if (mapped_path_at(&range[12]) != nullptr) wrong.fetch_add(1);
      }
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        for (int r = 0; r < kRangesPerThread; ++r) {
          char* range = ranges[t * kRangesPerThread + r];
          const std::string path = "t" + std::to_string(t) + "r" + std::to_string(r);
          if (!register_mapping(range, 12, path) || mapped_path_at(&range[11]) == nullptr ||
              mapped_path_at(&range[11]) != path) {
            wrong.fetch_add(1);
          }
        }
        for (int r = 0; r < kRangesPerThread; ++r) {
          char* range = ranges[t * kRangesPerThread + r];
          unregister_mapping(range);
          if (mapped_path_at(range) != nullptr) wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  done.store(true);
  scanner.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace stoker
