// DatasetWriter: shard rolling, crash safety (with a real SIGKILL) and refusal to overwrite.
#include "stoker/store/dataset_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "stoker/store/dataset.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

TEST(DatasetWriterTest, RollsShardsAtTheSizeLimitAndKeepsGlobalOrder) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir / "ds", 1000, 10, /*shard_bytes=*/4096);
  auto ds = Dataset::open(dir / "ds").value_or_throw();
  EXPECT_GE(ds->num_shards(), 1000 * 36 / 4096);
  ASSERT_EQ(ds->size(), 1000u);
  for (uint64_t i = 0; i < ds->size(); ++i) {
    EXPECT_EQ(ds->fixed_field(i, 0)[0], static_cast<uint8_t>(i * 4));
    int64_t label;
    std::memcpy(&label, ds->fixed_field(i, 1), 8);
    EXPECT_EQ(label, static_cast<int64_t>(i % 10));
  }
  for (int s = 0; s < ds->num_shards(); ++s) EXPECT_LE(ds->shard(s).file_bytes(), 4096u);
}

TEST(DatasetWriterTest, ExistingOutputDirectoryIsRefused) {
  testing::TempDir dir;
  fs::create_directory(dir / "ds");
  Schema schema = Schema::create({{"x", DType::kInt64, {}}}).value_or_throw();
  auto writer = DatasetWriter::create(dir / "ds", schema);
  ASSERT_FALSE(writer.is_ok());
  EXPECT_EQ(writer.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(writer.status().message().find(dir / "ds"), std::string::npos);
}

TEST(DatasetWriterTest, AbandonedWriterLeavesNothing) {
  testing::TempDir dir;
  Schema schema = Schema::create({{"x", DType::kInt64, {}}}).value_or_throw();
  {
    auto writer = DatasetWriter::create(dir / "ds", schema).value_or_throw();
    int64_t v = 5;
    ASSERT_TRUE(writer->append(reinterpret_cast<uint8_t*>(&v), 8).is_ok());
  }
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(DatasetWriterTest, EmptyDatasetIsValid) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir / "ds", 0);
  auto ds = Dataset::open(dir / "ds").value_or_throw();
  EXPECT_EQ(ds->size(), 0u);
  EXPECT_EQ(ds->num_shards(), 0);
}

// A child process writes a large dataset and is killed with SIGKILL part-way; whatever it left
// must not open as a dataset, and a new writer for the same directory must succeed.
TEST(DatasetWriterTest, SigkillPartWayLeavesNothingThatReadsAsADataset) {
  testing::TempDir dir;
  const std::string out = dir / "ds";
  for (int delay_ms : {5, 40, 150}) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      testing::write_labelled_dataset(out, 2000000, 10, /*shard_bytes=*/1 << 20);
      ::_exit(0);
    }
    ::usleep(delay_ms * 1000);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (WIFEXITED(status)) {  // the child finished before the kill: a complete dataset
      ASSERT_TRUE(Dataset::open(out).is_ok());
      fs::remove_all(out);
      continue;
    }
    EXPECT_FALSE(Dataset::open(out).is_ok());
    EXPECT_FALSE(fs::exists(out));
    testing::write_labelled_dataset(out, 10);  // also removes the dead writer's staging dir
    EXPECT_TRUE(Dataset::open(out).is_ok());
    int entries = 0;
    for (auto& e : fs::directory_iterator(dir.path())) entries += e.path() != out;
    EXPECT_EQ(entries, 0) << "stale staging directory left behind";
    fs::remove_all(out);
  }
}

}  // namespace
}  // namespace stoker
