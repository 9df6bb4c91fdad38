// DatasetWriter: shard rolling, crash safety (with a real SIGKILL) and refusal to overwrite.
#include "stoker/store/dataset_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "stoker/store/dataset.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

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

// A second writer of the same dataset — another process, or another writer in this one — is
// refused at once, while the first one's staging directory stays untouched; once the first is
// gone, its leftovers are no obstacle.
TEST(DatasetWriterTest, ASecondWriterOfTheSameDatasetIsRefusedAtTheStart) {
  testing::TempDir dir;
  Schema schema = Schema::create({{"x", DType::kInt64, {}}}).value_or_throw();
  auto first = DatasetWriter::create(dir / "ds", schema).value_or_throw();
  int64_t v = 5;
  ASSERT_TRUE(first->append(reinterpret_cast<uint8_t*>(&v), 8).is_ok());
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto second = DatasetWriter::create(dir / "ds", schema);
    const bool refused =
        !second.is_ok() && second.status().code() == StatusCode::kAlreadyExists &&
        second.status().message().find("another process is writing") != std::string::npos;
    ::_exit(refused ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the second writer was refused";
  ASSERT_TRUE(first->finish().is_ok());
  EXPECT_EQ(Dataset::open(dir / "ds").value_or_throw()->size(), 1u);
}

// Folders named like staging directories that stoker did not stage (no marker naming them, not
// empty) are the user's: a writer of DIR leaves them and their contents alone.
TEST(DatasetWriterTest, AUsersFolderNamedLikeStagingIsLeftAlone) {
  testing::TempDir dir;
  for (const char* name : {"ds.partial-mybackup", "ds.partial-12345", "ds.partial-"}) {
    fs::create_directories(dir / name);
    ASSERT_TRUE(write_file_atomically(dir / name + "/keep.txt", "mine").is_ok());
  }
  fs::create_directories(dir / "ds.partial-99999");  // empty: a writer killed at its start
  testing::write_labelled_dataset(dir / "ds", 10);
  for (const char* name : {"ds.partial-mybackup", "ds.partial-12345", "ds.partial-"})
    EXPECT_EQ(read_file(dir / name + "/keep.txt").value_or_throw(), "mine") << name;
  EXPECT_FALSE(fs::exists(dir / "ds.partial-99999"));
  EXPECT_FALSE(fs::exists(dir / "ds/.stoker-staging")) << "the marker stays out of the dataset";
}

// A dataset named by a bare name is written into the current directory.
TEST(DatasetWriterTest, ABareNameIsWrittenInTheCurrentDirectory) {
  testing::TempDir dir;
  const fs::path before = fs::current_path();
  fs::current_path(dir.path());
  Schema schema = Schema::create({{"x", DType::kInt64, {}}}).value_or_throw();
  auto writer = DatasetWriter::create("ds", schema);
  const Status finished = writer.is_ok() ? writer.value()->finish() : writer.status();
  fs::current_path(before);
  EXPECT_TRUE(finished.is_ok()) << finished.message();
  EXPECT_TRUE(Dataset::open(dir / "ds").is_ok());
}

// `hop/..` is where the kernel takes it (the parent of hop's target), not the folder holding
// hop: the writer writes where the output checks looked.
TEST(DatasetWriterTest, ALinksDotDotIsResolvedByTheKernel) {
  testing::TempDir dir;
  fs::create_directories(dir / "src/cls");
  fs::create_directories(dir / "elsewhere/a/b");
  fs::create_directory_symlink("../../elsewhere/a/b", dir / "src/cls/hop");
  testing::write_labelled_dataset(dir / "src/cls/hop/../newds", 10);
  EXPECT_TRUE(Dataset::open(dir / "elsewhere/a/newds").is_ok());
  EXPECT_FALSE(fs::exists(dir / "src/cls/newds"));
}

TEST(DatasetWriterTest, AStopRequestEndsTheWriterAndLeavesNothing) {
  testing::TempDir dir;
  Schema schema = Schema::create({{"x", DType::kInt64, {}}}).value_or_throw();
  bool stop = false;
  DatasetWriterOptions options;
  options.stop_requested = [&stop] { return stop; };
  {
    auto writer = DatasetWriter::create(dir / "ds", schema, options).value_or_throw();
    int64_t v = 5;
    ASSERT_TRUE(writer->append(reinterpret_cast<uint8_t*>(&v), 8).is_ok());
    stop = true;
    const Status stopped = writer->append(reinterpret_cast<uint8_t*>(&v), 8);
    EXPECT_EQ(stopped.code(), StatusCode::kCancelled);
    EXPECT_NE(stopped.message().find(dir / "ds"), std::string::npos) << stopped.message();
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

TEST(DatasetWriterTest, ComputesTheStatisticsOfUint8ImageFieldsFromTheRecords) {
  testing::TempDir dir;
  const Schema schema = Schema::create({{"rgb", DType::kUint8, {3, 5, 7}},
                                        {"gray", DType::kUint8, {6, 4}},
                                        {"label", DType::kInt64, {}},
                                        {"vector", DType::kUint8, {16}},
                                        {"floats", DType::kFloat32, {3, 2, 2}},
                                        {"flat", DType::kUint8, {1, 1, 1}}})
                            .value_or_throw();
  std::mt19937_64 rng(7);
  std::vector<std::vector<uint8_t>> records;
  ChannelStatistics rgb(3), gray(1);
  for (int i = 0; i < 300; ++i) {
    records.push_back(testing::random_record(schema, rng));
    records.back()[schema.fixed_offset(5)] = 9;  // "flat" is constant: std 0, no statistics
    rgb.add_planes(records.back().data() + schema.fixed_offset(0), 35);
    gray.add_planes(records.back().data() + schema.fixed_offset(1), 24);
  }
  testing::write_dataset(dir / "ds", schema, records, /*shard_bytes=*/4096);
  const Manifest m = Manifest::load(dir / "ds").value_or_throw();
  ASSERT_GT(m.shards.size(), 1u);
  ASSERT_EQ(m.statistics.size(), 2u) << "only the uint8 [C,H,W] and [H,W] fields not constant";
  for (const auto& [name, expected] : {std::pair{"rgb", rgb.summary()}, {"gray", gray.summary()}}) {
    const FieldStatistics& stats = m.statistics.at(name);
    EXPECT_EQ(stats.mean, expected.mean) << name;
    EXPECT_EQ(stats.std, expected.std) << name;
    EXPECT_EQ(stats.pixels, expected.pixels) << name;
  }
  EXPECT_EQ(m.statistics.at("rgb").pixels, 300u * 35);
  // Random bytes: every channel's mean near 127.5 / 255 and std near 73.9 / 255.
  for (double mean : m.statistics.at("rgb").mean) EXPECT_NEAR(mean, 0.5, 0.02);
  for (double std : m.statistics.at("rgb").std) EXPECT_NEAR(std, 0.2887, 0.01);
}

TEST(DatasetWriterTest, NoRecordsNoStatistics) {
  testing::TempDir dir;
  testing::write_labelled_dataset(dir / "ds", 0);
  EXPECT_TRUE(Manifest::load(dir / "ds").value_or_throw().statistics.empty());
}

// An image dataset's bytes field gets the statistics the importer decodes, one per record.
class DecodedStatisticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    schema_ = Schema::create({{"image", DType::kBytes, {}}, {"label", DType::kInt64, {}}})
                  .value_or_throw();
    writer_ = DatasetWriter::create(dir_ / "ds", schema_).value_or_throw();
  }
  // Appends a record whose image decodes to `pixels` RGB pixels of value i, i + 1, i + 2.
  ChannelStatistics append(int i, size_t pixels) {
    RecordEncoder encoder(schema_);
    const int64_t label = i;
    throw_if_error(encoder.set_bytes(0, reinterpret_cast<const uint8_t*>("img"), 3));
    throw_if_error(encoder.set_fixed(1, &label, sizeof label));
    const std::vector<uint8_t>& record = encoder.encode();
    throw_if_error(writer_->append(record.data(), record.size()));
    std::vector<uint8_t> rgb;
    for (size_t p = 0; p < pixels; ++p)
      for (int c = 0; c < 3; ++c) rgb.push_back(static_cast<uint8_t>(i + c));
    ChannelStatistics stats(3);
    stats.add_interleaved(rgb.data(), pixels, 1, 3 * pixels);
    return stats;
  }
  void expect_refused(const Status& s, const std::string& words) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
  }
  testing::TempDir dir_;
  Schema schema_;
  std::unique_ptr<DatasetWriter> writer_;
};

TEST_F(DecodedStatisticsTest, EveryRecordsPixelsGoIntoTheManifest) {
  ChannelStatistics all(3);
  for (int i = 0; i < 10; ++i) {
    const ChannelStatistics image = append(i, 4 + i);
    ASSERT_TRUE(writer_->add_decoded_statistics(0, image).is_ok());
    ASSERT_TRUE(all.merge(image).is_ok());
  }
  ASSERT_TRUE(writer_->finish().is_ok());
  const Manifest m = Manifest::load(dir_ / "ds").value_or_throw();
  ASSERT_EQ(m.statistics.count("image"), 1u);
  EXPECT_EQ(m.statistics.at("image").mean, all.summary().mean);
  EXPECT_EQ(m.statistics.at("image").std, all.summary().std);
  EXPECT_EQ(m.statistics.at("image").pixels, 4u * 10 + 45);
}

TEST_F(DecodedStatisticsTest, WithoutDecodedPixelsTheFieldHasNone) {
  for (int i = 0; i < 3; ++i) append(i, 2);
  ASSERT_TRUE(writer_->finish().is_ok());
  EXPECT_TRUE(Manifest::load(dir_ / "ds").value_or_throw().statistics.empty());
}

TEST_F(DecodedStatisticsTest, StatisticsOutOfTurnOrOfTheWrongKindAreRefused) {
  ChannelStatistics image(3);
  expect_refused(writer_->add_decoded_statistics(0, image), "given for 1 records of 0");
  image = append(0, 2);
  expect_refused(writer_->add_decoded_statistics(1, image), "field 1 is not a bytes field");
  expect_refused(writer_->add_decoded_statistics(7, image), "field 7 is not a bytes field");
  expect_refused(writer_->add_decoded_statistics(0, ChannelStatistics(1)),
                 "field 'image': statistics of 1 channels cannot be merged");
  ASSERT_TRUE(writer_->add_decoded_statistics(0, image).is_ok());
  expect_refused(writer_->add_decoded_statistics(0, image), "given for 2 records of 1");
  // Given for the first record only: the manifest would describe part of the data.
  append(1, 2);
  expect_refused(writer_->finish(),
                 "decoded statistics of field 'image' were given for 1 of the 2");
  EXPECT_FALSE(fs::exists(dir_ / "ds"));
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
