// `stoker verify` (and the other readers) on crafted datasets whose checksums are all
// consistent but whose numbers or records are not what the format says: exit 1 and one line
// `stoker: ...` naming the shard, never a crash; a dataset verify passes is read by the others.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/store/manifest.h"
#include "stoker/testing/cli_run.h"
#include "stoker/testing/records.h"
#include "stoker/testing/shard_bytes.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/checksum.h"

namespace stoker {
namespace {

using namespace shard_format;
using testing::expect_one_line_error;
using testing::load;
using testing::run;
using testing::RunResult;
using testing::store;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

class VerifyCliTest : public ::testing::Test {
 protected:
  // root/train: 12 records {image: uint8 [1,2,2], label: int64 = i % 3, note: bytes} in several
  // shards, with class names.
  void SetUp() override {
    Schema schema = Schema::create({{"image", DType::kUint8, {1, 2, 2}},
                                    {"label", DType::kInt64, {}},
                                    {"note", DType::kBytes, {}}})
                        .value_or_throw();
    RecordEncoder encoder(schema);
    std::vector<std::vector<uint8_t>> records;
    for (int64_t i = 0; i < 12; ++i) {
      const uint8_t image[4] = {1, 2, 3, static_cast<uint8_t>(i)};
      const int64_t label = i % 3;
      const std::string note(i, 'n');
      throw_if_error(encoder.set_fixed(0, image, 4));
      throw_if_error(encoder.set_fixed(1, &label, 8));
      throw_if_error(encoder.set_bytes(2, note.data(), note.size()));
      records.push_back(encoder.encode());
    }
    testing::write_dataset(data_, schema, records, /*shard_bytes=*/400);
    Manifest manifest = Manifest::load(data_).value_or_throw();
    manifest.class_names = {"a", "b", "c"};
    throw_if_error(manifest.save(data_));
    ASSERT_GE(manifest.shards.size(), 3u);
    shard1_ = data_ + "/" + manifest.shards[1].file;
  }

  // Footer and index entries of shard 1's bytes.
  static Footer footer(const std::string& b) { return load<Footer>(b, testing::footer_at(b)); }
  static uint64_t entry_at(const std::string& b, uint64_t i) {
    return footer(b).index_offset + i * kIndexEntryBytes;
  }
  static IndexEntry entry(const std::string& b, uint64_t i) {
    return load<IndexEntry>(b, entry_at(b, i));
  }
  void change_shard1(const std::function<void(std::string*)>& change) {
    testing::rewrite_shard(data_, 1, change);
  }

  testing::TempDir dir_;
  const std::string root_ = dir_ / "root";
  const std::string data_ = root_ + "/train";
  std::string shard1_;
};

TEST_F(VerifyCliTest, WrittenDatasetVerifiesAndInspects) {
  RunResult verify = run("verify " + data_, dir_);
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_NE(verify.out.find("all 12 records"), std::string::npos) << verify.out;
  EXPECT_EQ(run("inspect " + data_, dir_).exit_code, 0);
}

struct Crafted {
  const char* what;
  std::function<void(std::string*)> change;
  const char* words;  // in the error
};

// Numbers of a shard pointing outside the file, with every checksum consistent: each reader
// stops at Dataset::open with one line naming the shard.
TEST_F(VerifyCliTest, NumbersPointingOutsideTheShardAreOneLineErrors) {
  const std::vector<Crafted> cases = {
      {"entry offset past the index",
       [](std::string* b) {
         IndexEntry e = entry(*b, 1);
         e.offset = footer(*b).index_offset + 8;
         store(b, entry_at(*b, 1), e);
       },
       "record 1: offset"},
      {"entry offset past the file",
       [](std::string* b) {
         IndexEntry e = entry(*b, 0);
         e.offset = b->size() + 100;
         store(b, entry_at(*b, 0), e);
       },
       "record 0: offset"},
      {"length past the end",
       [](std::string* b) {
         IndexEntry e = entry(*b, 1);
         e.length = b->size();
         store(b, entry_at(*b, 1), e);
       },
       "record 1: length"},
      {"offset + length wrapping 2^64",
       [](std::string* b) {
         IndexEntry e = entry(*b, 0);
         e.length = kU64Max - e.offset + 1 + 16;
         store(b, entry_at(*b, 0), e);
       },
       "record 0: length"},
      {"record count whose index size overflows",
       [](std::string* b) {
         Footer f = footer(*b);
         f.record_count = uint64_t{1} << 62;
         f.index_offset = testing::footer_at(*b);
         store(b, testing::footer_at(*b), f);
       },
       "record count"},
      {"schema length past the file",
       [](std::string* b) { store(b, 12, static_cast<uint32_t>(b->size())); }, "schema length"},
  };
  for (const Crafted& c : cases) {
    SCOPED_TRACE(c.what);
    throw_if_error(write_file_atomically(shard1_ + ".orig", read_file(shard1_).value_or_throw()));
    change_shard1(c.change);
    for (const std::string& command : {"verify " + data_, "inspect " + data_,
                                       "bench loader --epochs 1 --workers 1 --data " + data_}) {
      SCOPED_TRACE(command);
      RunResult r = run(command, dir_);
      expect_one_line_error(r, shard1_ + ": ");
      EXPECT_EQ(r.exit_code, 1);
      EXPECT_EQ(r.err.rfind("stoker: ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find(c.words), std::string::npos) << r.err;
    }
    throw_if_error(write_file_atomically(shard1_, read_file(shard1_ + ".orig").value_or_throw()));
    change_shard1([](std::string*) {});  // the manifest's index checksum back
  }
  EXPECT_EQ(run("verify " + data_, dir_).exit_code, 0);  // restored after each case
}

TEST_F(VerifyCliTest, TrainStopsAtTheCraftedShardWithOneLine) {
  change_shard1([](std::string* b) {
    IndexEntry e = entry(*b, 1);
    e.offset = kU64Max - 3;
    store(b, entry_at(*b, 1), e);
  });
  RunResult r = run("train --epochs 1 --no-eval --data " + root_, dir_);
  expect_one_line_error(r, shard1_ + ": record 1: offset");
  EXPECT_EQ(r.exit_code, 1);
}

// Record bytes that contradict the schema, with consistent checksums: only verify reads bytes
// fields, and it names the shard, the record and the field.
TEST_F(VerifyCliTest, BytesFieldLengthPastTheRecordFailsVerify) {
  change_shard1([](std::string* b) {
    const IndexEntry e = entry(*b, 0);
    store(b, e.offset + 12, uint32_t{1000});  // note's length
  });
  RunResult r = run("verify " + data_, dir_);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;
  EXPECT_NE(r.err.find(shard1_ + ": record 0: field 'note' length 1000 runs past the record"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("stoker: " + data_ + ": 1 of 12 records failed verification"),
            std::string::npos)
      << r.err;
}

TEST_F(VerifyCliTest, LabelOutsideTheClassNamesFailsVerify) {
  change_shard1([](std::string* b) { store(b, entry(*b, 0).offset + 4, int64_t{7}); });
  RunResult r = run("verify " + data_, dir_);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(shard1_ + ": record 0: label 7 is not one of the manifest's 3 classes"),
            std::string::npos)
      << r.err;
}

// A schema whose shape product overflows 64 bits, in the manifest and the (record-less) shard:
// rejected when the dataset is opened, so verify, inspect and bench say so in one line.
TEST_F(VerifyCliTest, SchemaWhoseShapeProductOverflowsIsOneLineError) {
  const std::string json =
      R"({"fields":[{"dtype":"int64","name":"x","shape":[2147483648,2147483648,4]}]})";
  const std::string ds = dir_ / "overflow";
  testing::write_labelled_dataset(ds, 0);
  std::vector<uint8_t> header = encode_header(json).value_or_throw();
  std::string shard(header.begin(), header.end());
  const Footer f = encode_footer(shard.size(), 0, 0, 0);
  shard.append(reinterpret_cast<const char*>(&f), sizeof f);
  testing::fix_checksums(&shard);
  throw_if_error(write_file_atomically(ds + "/shard-00000.stk", shard));
  nlohmann::json manifest =
      nlohmann::json::parse(read_file(ds + "/manifest.json").value_or_throw());
  manifest["schema"] = nlohmann::json::parse(json);
  manifest["shards"] = {{{"file", "shard-00000.stk"},
                         {"records", 0},
                         {"bytes", shard.size()},
                         {"index_xxh3", fmt::format("{:016x}", xxh3_64("", 0))}}};
  throw_if_error(write_file_atomically(ds + "/manifest.json", manifest.dump(2)));
  for (const std::string& command : {"verify " + ds, "inspect " + ds}) {
    SCOPED_TRACE(command);
    RunResult r = run(command, dir_);
    expect_one_line_error(r, ds);
    EXPECT_EQ(r.exit_code, 1);
  }
}

}  // namespace
}  // namespace stoker
