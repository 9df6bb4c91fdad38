// Tar indexes: members, checksums and .npy headers, kept in the cache folder only, read back while
// the tar is the same, built again when it changed; a member changed in place is caught when read.
#include "stoker/store/import/tar_index.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "stoker/testing/tar_fixtures.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"
#include "stoker/util/regular_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// The index of the local tar `tar`, kept in `cache_dir`.
TarIndex local_index(const std::string& tar, const std::string& cache_dir) {
  return tar_index_of(*local_files({tar}), 0, cache_dir).value_or_throw();
}

size_t index_test_files(const std::string& dir) {
  size_t n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) n += entry.is_regular_file();
  return n;
}

TEST(TarIndex, HoldsEachMembersChecksumAndIsKeptInTheCacheOnly) {
  testing::TempDir dir;
  fs::create_directories(dir / "data");
  const std::string tar = dir / "data/t.tar";
  tar_fixtures::write_tar(tar, {{"a.jpg", "AAAA"}, {"a.cls", "7"}});
  const TarIndex built = local_index(tar, dir / "cache");
  ASSERT_EQ(built.listing.members.size(), 2u);
  EXPECT_EQ(built.checksums[0], xxh3_64("AAAA", 4));
  EXPECT_EQ(built.checksums[1], xxh3_64("7", 1));
  EXPECT_EQ(built.npy_heads, std::vector<std::string>(2));
  EXPECT_EQ(built.identity.size, fs::file_size(tar));
  EXPECT_EQ(index_test_files(dir / "data"), 1u) << "nothing written next to the tar";
  EXPECT_EQ(index_test_files(dir / "cache"), 1u);

  // Read back from the cache: a saved index is used while the tar's identity holds.
  const std::string saved = (*fs::directory_iterator(dir / "cache/tar-indexes")).path();
  TarIndex marked = built;
  marked.listing.members[0].name = "marked.jpg";
  ASSERT_TRUE(write_file_atomically(saved, encode_tar_index(marked)).is_ok());
  EXPECT_EQ(local_index(tar, dir / "cache").listing.members[0].name, "marked.jpg");

  // The tar rewritten (another size): built again.
  tar_fixtures::write_tar(tar, {{"b.jpg", "BBBBBB"}, {"b.cls", "1"}, {"c.jpg", "C"}});
  const TarIndex rebuilt = local_index(tar, dir / "cache");
  ASSERT_EQ(rebuilt.listing.members.size(), 3u);
  EXPECT_EQ(rebuilt.listing.members[0].name, "b.jpg");

  // A damaged saved index is built again too.
  ASSERT_TRUE(write_file_atomically(saved, "garbage").is_ok());
  EXPECT_EQ(local_index(tar, dir / "cache").listing.members.size(), 3u);
}

TEST(TarIndex, HoldsEachNpyMembersHeader) {
  testing::TempDir dir;
  const std::string tar = dir / "t.tar";
  const std::string npy = tar_fixtures::npy_file("np.arange(100, dtype='<f4')");
  tar_fixtures::write_tar(tar, {{"a.NPY", npy}, {"a.x.npy", "short"}, {"a.npz", npy}});
  const TarIndex index = build_tar_index(tar).value_or_throw();
  EXPECT_EQ(index.npy_heads,
            (std::vector<std::string>{npy.substr(0, npy.size() - 400), "short", ""}));
  const std::string saved = encode_tar_index(index);
  EXPECT_EQ(decode_tar_index({reinterpret_cast<const uint8_t*>(saved.data()), saved.size()}, tar)
                .value_or_throw()
                .npy_heads,
            index.npy_heads);
}

TEST(TarIndex, AMemberChangedInPlaceIsCaughtWhenRead) {
  testing::TempDir dir;
  const std::string tar = dir / "t.tar";
  const nlohmann::json listing = tar_fixtures::write_tar(tar, {{"a.jpg", "AAAA"}});
  const TarIndex index = build_tar_index(tar).value_or_throw();
  {
    RegularFile file = RegularFile::open(tar).value_or_throw();
    EXPECT_EQ(read_member(file.fd(), index, 0).value_or_throw(), "AAAA");
  }
  std::string bytes = tar_fixtures::file_bytes(tar);
  bytes[listing[0]["offset_data"].get<size_t>()] = 'X';
  ASSERT_TRUE(write_file_atomically(tar, bytes).is_ok());
  RegularFile file = RegularFile::open(tar).value_or_throw();
  const Result<std::string> read = read_member(file.fd(), index, 0);
  EXPECT_EQ(read.status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(read.status().message(),
            "member a.jpg: not the bytes indexed (the tar changed after its index was built)");
}

TEST(TarIndex, SavedFormRoundTripsAndRefusesDamage) {
  TarIndex index;
  index.path = "x.tar";
  index.identity = {4096, 123456789};
  index.listing.members = {{"a.jpg", 512, 10, ""}, {"l", 1536, 0, "a FIFO"}};
  index.listing.damage = "member z: cut short";
  index.checksums = {1, 2};
  index.npy_heads = {"", ""};
  const std::string saved = encode_tar_index(index);
  const ByteSpan bytes{reinterpret_cast<const uint8_t*>(saved.data()), saved.size()};
  const TarIndex back = decode_tar_index(bytes, "x.tar").value_or_throw();
  EXPECT_EQ(back.listing.members[1].unsupported, "a FIFO");
  EXPECT_EQ(back.listing.damage, "member z: cut short");
  EXPECT_EQ(back.checksums, index.checksums);
  EXPECT_TRUE(back.identity == index.identity);
  EXPECT_EQ(decode_tar_index(bytes, "y.tar").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(decode_tar_index({bytes.data, bytes.size - 1}, "x.tar").status().code(),
            StatusCode::kCorrupt);
  // A member past the tar's end, sealed with a good checksum, is refused too.
  index.listing.members[0].size = 4000;
  const std::string past = encode_tar_index(index);
  EXPECT_EQ(decode_tar_index({reinterpret_cast<const uint8_t*>(past.data()), past.size()}, "x.tar")
                .status()
                .code(),
            StatusCode::kCorrupt);
}

}  // namespace
}  // namespace stoker
