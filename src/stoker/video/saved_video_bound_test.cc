// The bound on a cache folder's saved video indexes: the least recently used (written or read)
// go first; a folder past its bound is brought under it by the next save; readers in processes
// that save and evict at once find whole indexes or none, and an index deleted while in use is
// indexed again and saved again.
#include "stoker/video/saved_video_bound.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "stoker/testing/temp_dir.h"
#include "stoker/testing/video_set.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/saved_form.h"
#include "stoker/video/saved_video_index.h"
#include "stoker/video/video_cache.h"

namespace stoker::video {
namespace {

namespace fs = std::filesystem;

// The i-th of many videos with the same index (the key alone differs).
VideoKey key_of(uint64_t i) { return VideoKey{Hash128{i * 0x9e3779b97f4a7c15, i << 52}, 1000 + i}; }

// Sets the mtime of `path` to `seconds` after the epoch: its last use.
void used_at(const std::string& path, int64_t seconds) {
  const timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

// The keys of 0 to n-1 whose saved index `cache` holds.
std::set<uint64_t> kept(const std::string& cache, uint64_t n) {
  std::set<uint64_t> out;
  for (uint64_t i = 0; i < n; ++i)
    if (fs::exists(saved_video_file(cache, key_of(i)))) out.insert(i);
  return out;
}

uint64_t folder_bytes(const std::string& cache) {
  uint64_t bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(cache + "/" + kVideoIndexFolder))
    if (entry.is_regular_file()) bytes += entry.file_size();
  return bytes;
}

class SavedVideoBound : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = testing::video_bytes("h264_gop12_bframes.mp4");
    known_ = testing::known_video_of(bytes_);
    size_ = encode_known_video(key_of(0), known_).size();
  }
  void TearDown() override { set_saved_form_bound(cache_.path(), 0); }

  stoker::testing::TempDir cache_;
  std::string bytes_;
  KnownVideo known_;
  uint64_t size_ = 0;  // one saved index's bytes
};

// Eviction deletes by last use, oldest first, down to what is kept; a read is a use; a writer's
// temporary is neither counted nor deleted.
TEST_F(SavedVideoBound, EvictsTheLeastRecentlyUsedFirst) {
  for (uint64_t i = 0; i < 6; ++i) {
    save_known_video(cache_.path(), key_of(i), known_);
    used_at(saved_video_file(cache_.path(), key_of(i)), 1'000'000 + 10 * int64_t(i));
  }
  const std::string temporary = saved_video_file(cache_.path(), key_of(0)) + ".tmp-1.0";
  std::ofstream(temporary) << std::string(50'000, 'x');
  ASSERT_TRUE(load_known_video(cache_.path(), key_of(1)).has_value());  // 1 used now
  EXPECT_EQ(evict_saved_videos(cache_.path(), 6 * size_), 6 * size_);
  EXPECT_EQ(kept(cache_.path(), 6), (std::set<uint64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(evict_saved_videos(cache_.path(), 3 * size_ + size_ / 2), 3 * size_);
  EXPECT_EQ(kept(cache_.path(), 6), (std::set<uint64_t>{1, 4, 5}));
  EXPECT_EQ(evict_saved_videos(cache_.path(), 0), 0u);
  EXPECT_EQ(kept(cache_.path(), 6), std::set<uint64_t>{});
  EXPECT_TRUE(fs::exists(temporary));
}

// Under a bound (a loader's cache_gb), a save that passes it deletes the least recently used
// down to 7/8 of it: the folder never holds more, the latest saves and reads are kept.
TEST_F(SavedVideoBound, ASaveKeepsTheFolderUnderItsBound) {
  set_saved_form_bound(cache_.path(), 8 * size_);
  for (uint64_t i = 0; i < 30; ++i) {
    save_known_video(cache_.path(), key_of(i), known_);
    used_at(saved_video_file(cache_.path(), key_of(i)), 2'000'000 + 10 * int64_t(i));
    EXPECT_LE(folder_bytes(cache_.path()), 8 * size_) << i;
    if (i == 17) {  // 10 to 17 kept; 12 read, the oldest but two
      ASSERT_TRUE(load_known_video(cache_.path(), key_of(12)).has_value());
      used_at(saved_video_file(cache_.path(), key_of(12)), 2'000'000 + 175);
    }
    // Every other save passes the bound: 18's deletes 10 and 11, 20's 13 and 14, not 12.
    if (i == 20) {
      EXPECT_EQ(kept(cache_.path(), 30), (std::set<uint64_t>{12, 15, 16, 17, 18, 19, 20}));
    }
  }
  EXPECT_EQ(kept(cache_.path(), 30), (std::set<uint64_t>{22, 23, 24, 25, 26, 27, 28, 29}));
}

// An index deleted while a loader uses it: the worker keeps its copy in memory; the next
// opening that finds none (a later run) indexes the video again and saves it again.
TEST_F(SavedVideoBound, AnIndexDeletedWhileInUseIsBuiltAgain) {
  const auto open = [&] {
    Result<IndexedVideo> opened = Status::ok();
    std::thread([&] {
      opened = open_indexed_video(testing::span_of(bytes_), cache_.path());
    }).join();
    return opened;
  };
  const std::string saved = saved_video_file(cache_.path(), video_key(testing::span_of(bytes_)));
  ASSERT_TRUE(open().is_ok());
  const std::string whole = read_file(saved).value_or_throw();
  EXPECT_EQ(evict_saved_videos(cache_.path(), 0), 0u);
  ASSERT_FALSE(fs::exists(saved));
  Result<IndexedVideo> again = open();
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(again.value().index->pts, known_.index.pts);
  EXPECT_EQ(read_file(saved).value_or_throw(), whole);
}

// One worker of the shared-folder test: `rounds` saves and reads of keys 0 to `keys` - 1 by its
// own stride, each read whole or none; false at the first read that is neither.
bool share_folder(const std::string& cache, const KnownVideo& known, uint64_t worker,
                  uint64_t rounds, uint64_t keys) {
  for (uint64_t r = 0; r < rounds; ++r) {
    const VideoKey key = key_of((r * (2 * worker + 1) + worker) % keys);
    if (r % 3 == 0) save_known_video(cache, key, known);
    const std::optional<KnownVideo> read = load_known_video(cache, key);
    if (read && read->index.pts != known.index.pts) return false;
  }
  return true;
}

// Processes saving, reading and evicting in one folder at once: every read finds a whole index
// or none; once they are done, the next save brings the folder under its bound.
TEST_F(SavedVideoBound, ProcessesSharingTheFolderReadWholeIndexesOrNone) {
  set_saved_form_bound(cache_.path(), 6 * size_);
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(share_folder(cache_.path(), known_, p, 300, 20) ? 0 : 1);
    children.push_back(pid);
  }
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  save_known_video(cache_.path(), key_of(99), known_);
  EXPECT_LE(folder_bytes(cache_.path()), 6 * size_);
  EXPECT_TRUE(load_known_video(cache_.path(), key_of(99)).has_value());
}

// The same workers one after another in one process: the reads are whole or none, and the
// folder is under its bound after every save.
TEST_F(SavedVideoBound, WorkersInTurnReadWholeIndexesOrNone) {
  set_saved_form_bound(cache_.path(), 6 * size_);
  for (uint64_t p = 0; p < 4; ++p) {
    EXPECT_TRUE(share_folder(cache_.path(), known_, p, 300, 20));
    EXPECT_LE(folder_bytes(cache_.path()), 6 * size_);
  }
}

}  // namespace
}  // namespace stoker::video
