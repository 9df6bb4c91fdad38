// The `stoker` binary on input that is not what it claims: files that are FIFOs or devices,
// manifests that contradict docs/FORMAT.md, absurd schemas, labels and IDX headers. Each is
// one line `stoker: ...` naming the file and exit status 1 — never a hang, a crash or a huge
// allocation.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "stoker/testing/classification.h"
#include "stoker/testing/cli_run.h"
#include "stoker/testing/records.h"
#include "stoker/testing/special_files.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::run;
using testing::RunResult;

void expect_refused(const RunResult& r, const std::string& words) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("stoker: ", 0), 0u) << r.err;
  testing::expect_one_line_error(r, words);
}

// Writes the manifest of the dataset at `dir` changed by `edit`.
void edit_manifest(const std::string& dir, const std::function<void(json&)>& edit) {
  json j = json::parse(read_file(dir + "/manifest.json").value_or_throw());
  edit(j);
  throw_if_error(write_file_atomically(dir + "/manifest.json", j.dump(2)));
}

TEST(BadInputCliTest, FilesThatAreFifosOrDevicesAreRefusedWithoutBlocking) {
  testing::TempDir dir;
  testing::HangGuard guard(120);
  const std::string ds = dir / "ds";
  testing::write_labelled_dataset(ds, 50);
  const std::string manifest = ds + "/manifest.json", shard = ds + "/shard-00000.stk";
  fs::rename(shard, dir / "shard.keep");
  testing::make_fifo(shard);
  for (const char* command : {"inspect ", "verify "})
    expect_refused(run(command + ds, dir), shard + ": not a regular file (a FIFO)");
  fs::remove(shard);
  fs::create_symlink("/dev/zero", shard);
  expect_refused(run("inspect " + ds, dir), shard + ": not a regular file (a character device)");

  fs::rename(manifest, dir / "manifest.keep");
  testing::make_fifo(manifest);
  expect_refused(run("inspect " + ds, dir), manifest + ": not a regular file (a FIFO)");
  fs::remove(manifest);
  fs::create_symlink("/dev/zero", manifest);
  expect_refused(run("verify " + ds, dir), manifest + ": not a regular file (a character device)");
  fs::remove(manifest);
  throw_if_error(write_file_atomically(manifest, ""));
  fs::resize_file(manifest, uint64_t{1} << 40);  // sparse: a terabyte that is never read
  expect_refused(run("inspect " + ds, dir), manifest + ": larger than 67108864 bytes");
  fs::remove(manifest);
  fs::create_symlink(manifest, manifest);
  expect_refused(run("inspect " + ds, dir), manifest + ": cannot stat");
  fs::create_directory_symlink(dir / "loop", dir / "loop");
  expect_refused(run("inspect " + dir / "loop", dir), dir / "loop" + ": no such dataset directory");

  testing::make_fifo(dir / "images.gz");
  expect_refused(run("convert idx --images " + dir / "images.gz" + " --labels " + manifest +
                         " --out " + dir / "out",
                     dir),
                 dir / "images.gz" + ": not a regular file (a FIFO)");
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(BadInputCliTest, ManifestsThatContradictTheFormatAreRefused) {
  testing::TempDir dir;
  struct Case {
    std::function<void(json&)> edit;
    const char* words;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["format_version"] = 1.0; }, "'format_version' must be an integer"},
      {[](json& j) { j["records"] = -50; }, "'records' must be a non-negative integer"},
      {[](json& j) { j["shards"][0]["index_xxh3"] = "37c8c13198acad0"; },
       "shard 0: 'index_xxh3' must be 16 hex digits"},
      {[](json& j) { j["shards"][0]["file"] = ".."; }, "shard 0: \"..\" is not a plain file name"},
      {[](json& j) {
         j["shards"].push_back(j["shards"][0]);
         j["records"] = 100;
       },
       "shard \"shard-00000.stk\" is listed twice"},
      // A shape product that wraps around 2^64 once showed as a 0-byte record (0.0 MB).
      {[](json& j) {
         j["schema"]["fields"][0]["shape"] = {1 << 30, 1 << 30, 1 << 30, 16};
       },
       "schema field 'image' takes more than 4 GiB"},
      {[](json& j) {
         j["statistics"]["image"]["mean"] = {0.5, 0.5};
       },
       "statistics of \"image\": 'mean' must be an array of 1 number in [0, 1] (one per channel)"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string ds = dir / ("ds" + std::to_string(i));
    testing::write_labelled_dataset(ds, 50);
    edit_manifest(ds, cases[i].edit);
    expect_refused(run("inspect " + ds, dir), ds + "/manifest.json: " + cases[i].words);
  }
  const std::string ds = dir / "trailing";
  testing::write_labelled_dataset(ds, 50);
  std::string text = read_file(ds + "/manifest.json").value_or_throw();
  throw_if_error(write_file_atomically(ds + "/manifest.json", text + "{}"));
  expect_refused(run("inspect " + ds, dir), ds + "/manifest.json: not valid JSON");
}

TEST(BadInputCliTest, LabelsFarOutsideAnyClassCount) {
  testing::TempDir dir;
  const auto label_of = [](int64_t i) -> int64_t {
    if (i == 7) return int64_t{1} << 62;
    return i == 9 ? -3 : i % 4;
  };
  testing::write_rows_dataset(dir / "data/train", 40, 1, {}, label_of);
  testing::write_rows_dataset(dir / "data/test", 10, 2);
  RunResult inspect = run("inspect " + dir / "data/train", dir);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("4611686018427387904         1"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("    -3         1"), std::string::npos) << inspect.out;
  // Inferring the class count from the largest label once built a 2^62-class model.
  expect_refused(run("train --epochs 1 --data " + dir / "data", dir),
                 dir / "data/train" +
                     ": record 7 has label 4611686018427387904; labels must be "
                     "class numbers in [0, 65536)");
}

TEST(BadInputCliTest, IdxHeaderPromisingMoreThanTheFileHoldsIsTruncated) {
  testing::TempDir dir;
  // 2^32 - 1 images of 65535 x 65535 pixels, then 4 bytes of data.
  const std::string header = {0, 0, 8,      3,      '\xff', '\xff', '\xff', '\xff',
                              0, 0, '\xff', '\xff', 0,      0,      '\xff', '\xff'};
  throw_if_error(write_file_atomically(dir / "images", header + "data"));
  throw_if_error(write_file_atomically(dir / "labels",
                                       std::string{0, 0, 8, 1, '\xff', '\xff', '\xff', '\xff'}));
  expect_refused(run("convert idx --images " + dir / "images" + " --labels " + dir / "labels" +
                         " --out " + dir / "out",
                     dir),
                 dir / "images" + ": truncated: header promises");
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// A path that is not UTF-8 cannot go into the JSON that records it (the log's run record, a
// checkpoint, a manifest): refused up front in one line naming the option, nothing written.
TEST(BadInputCliTest, PathsThatAreNotUtf8AreRefusedUpFront) {
  testing::TempDir dir;
  testing::write_rows_dataset(dir / "data/train", 100, 1);
  const std::string latin1 = dir / "caf\xe9";
  const std::string data = "--data " + dir / "data";
  for (const std::string& args : {data + " --log " + latin1 + ".jsonl",
                                  data + " --checkpoint-dir " + latin1, "--data " + latin1}) {
    const RunResult r = run("train --max-steps 1 --no-eval " + args, dir);
    testing::expect_one_line_error(r, "is not valid UTF-8");
    EXPECT_NE(r.err.find("caf\\xe9"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(latin1 + ".jsonl"));
    EXPECT_FALSE(fs::exists(latin1));
  }
}

}  // namespace
}  // namespace stoker
