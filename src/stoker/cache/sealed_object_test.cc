// Sealed objects of the remote cache (shard_cache.h, ObjectCheck::kSealed: a remote video's
// blocks, admitted without an fsync): each file ends with its bytes' XXH3, and a file torn or
// altered in the cache (what a crash may leave) is found by the next DatasetCache, removed and
// downloaded again by the same fetch, the ledger counting what the disk holds throughout.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "stoker/cache/shard_cache.h"
#include "stoker/store/in_place_files.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"

namespace stoker {
namespace {

constexpr uint64_t kBlockBytes = 5000;

std::vector<ShardInfo> video_blocks(int n) {
  std::vector<ShardInfo> infos(n);
  for (int i = 0; i < n; ++i) {
    infos[i].file = fmt::format("video.mp4@{}", i);
    infos[i].bytes = kBlockBytes;
    infos[i].index_checksum = 0xb10c000000000000ull + i;
  }
  return infos;
}

// Block `i`'s bytes: distinct for every block and offset.
std::string block_bytes(int i) {
  std::string bytes(kBlockBytes, '\0');
  for (uint64_t k = 0; k < kBlockBytes; ++k) bytes[k] = static_cast<char>((k * 7 + i * 13) & 0xff);
  return bytes;
}

class SealedObjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = ShardCache::open(dir_.path() + "/cache", 1 << 20).value_or_throw();
  }

  // Block `i` through a new DatasetCache (as a video's next open makes one), counting the
  // downloads; its bytes as read from the pinned file.
  std::string fetch(int i) {
    DatasetCache part =
        cache_->objects("http://h/v", video_blocks(4), ObjectCheck::kSealed).value_or_throw();
    const ShardDownload download = [&](const ShardInfo& info, int fd,
                                       const std::function<bool()>&) {
      ++downloads_;
      const std::string bytes = block_bytes(i);
      EXPECT_EQ(info.bytes, bytes.size());
      return ::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size())
                 ? Status::ok()
                 : io_error("pwrite");
    };
    EvictionAdvice lru;
    lru.policy = EvictionPolicy::kLru;
    CachedShard pinned = part.fetch(i, download, lru).value_or_throw();
    std::string out(kBlockBytes, '\0');
    EXPECT_EQ(read_at(pinned.fd(), "block", 0, reinterpret_cast<uint8_t*>(out.data()), kBlockBytes)
                  .value_or_throw(),
              kBlockBytes);
    return out;
  }

  std::string path(int i) const {
    return fmt::format("{}/cache/{}/shards/video.mp4@{}.{:016x}", dir_.path(), kObjectsKey, i,
                       0xb10c000000000000ull + i);
  }

  // The ledger's bytes against a listing of the disk.
  void expect_ledger_is_the_disk() {
    uint64_t listed = 0;
    for (const CacheFile& f :
         list_cache_files(dir_.path() + "/cache/" + kObjectsKey + "/shards", is_cached_file_name))
      listed += f.bytes;
    EXPECT_EQ(cache_->usage().bytes, listed);
  }

  testing::TempDir dir_;
  std::shared_ptr<ShardCache> cache_;
  int downloads_ = 0;
};

TEST_F(SealedObjectTest, AFileEndsWithItsBytesXxh3AndIsReadFromTheCacheNext) {
  EXPECT_EQ(fetch(1), block_bytes(1));
  const std::string file = read_file(path(1)).value_or_throw();
  ASSERT_EQ(file.size(), kBlockBytes + kSealBytes);
  const uint64_t sum = xxh3_64(file.data(), kBlockBytes);
  EXPECT_EQ(file.substr(kBlockBytes), std::string(reinterpret_cast<const char*>(&sum), kSealBytes));
  EXPECT_EQ(fetch(1), block_bytes(1));
  EXPECT_EQ(downloads_, 1);
  expect_ledger_is_the_disk();
}

// A crash may leave a renamed block whose bytes never reached the disk (zeros), or cut short; a
// byte altered stands for any other damage. Each is found by the next fetch, removed and
// downloaded again: the bytes read are the block's, and the ledger counts the disk.
TEST_F(SealedObjectTest, ATornOrAlteredFileIsDownloadedAgain) {
  const std::vector<std::function<void(int fd)>> damages = {
      [](int fd) {  // torn: zeros where its bytes were
        const std::string zeros(kBlockBytes + kSealBytes, '\0');
        ASSERT_EQ(::pwrite(fd, zeros.data(), zeros.size(), 0), static_cast<ssize_t>(zeros.size()));
      },
      [](int fd) { ASSERT_EQ(::ftruncate(fd, kBlockBytes / 2), 0); },  // cut short
      [](int fd) {                                                     // one byte changed
        ASSERT_EQ(::pwrite(fd, "?", 1, kBlockBytes / 3), 1);
      }};
  for (size_t d = 0; d < damages.size(); ++d) {
    const int i = static_cast<int>(d);
    EXPECT_EQ(fetch(i), block_bytes(i));
    const int fd = ::open(path(i).c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    damages[d](fd);
    ::close(fd);
    downloads_ = 0;
    EXPECT_EQ(fetch(i), block_bytes(i)) << "damage " << d;
    EXPECT_EQ(downloads_, 1) << "damage " << d;
    EXPECT_EQ(read_file(path(i)).value_or_throw().size(), kBlockBytes + kSealBytes);
    expect_ledger_is_the_disk();
  }
}

}  // namespace
}  // namespace stoker
