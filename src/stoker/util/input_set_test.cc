#include "stoker/util/input_set.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// A dataset folder data/train/{manifest.json,shard-00000.stk} and a model file, as inputs.
struct Inputs {
  testing::TempDir dir;
  InputSet set;
  Inputs() {
    fs::create_directories(dir / "data/train");
    EXPECT_TRUE(write_file_atomically(dir / "data/train/manifest.json", "{}").is_ok());
    EXPECT_TRUE(write_file_atomically(dir / "data/train/shard-00000.stk", "x").is_ok());
    EXPECT_TRUE(write_file_atomically(dir / "model.pt", "m").is_ok());
    set.add_datasets(dir / "data", "the training data");
    set.add_file(dir / "model.pt", "the model");
  }
  Status check(const std::string& path) const { return set.check_output("--out", path); }
};

void expect_refused(const Status& status, const std::string& says) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
  EXPECT_NE(status.message().find(says), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find('\n'), std::string::npos) << "one line";
}

TEST(InputSetTest, OutputsBesideTheInputsAreAllowed) {
  Inputs in;
  for (const std::string& path : {in.dir / "trace.json", in.dir / "new/dir/log.jsonl",
                                  in.dir / "model2.pt", in.dir.path(), std::string("")})
    EXPECT_TRUE(in.check(path).is_ok()) << path;
}

TEST(InputSetTest, AnInputFileOrTreeIsRefusedNamingBoth) {
  Inputs in;
  const Status file = in.check(in.dir / "model.pt");
  expect_refused(file, "--out '" + (in.dir / "model.pt") + "' is '" + (in.dir / "model.pt") +
                           "', a file of the model");
  expect_refused(in.check(in.dir / "data"), "is the training data '" + (in.dir / "data") + "'");
  expect_refused(in.check(in.dir / "data/train/manifest.json"), "a file of the training data");
  expect_refused(in.check(in.dir / "data/train/new.json"), "is inside the training data");
  expect_refused(in.check(in.dir / "data/train/sub/not/yet"), "is inside the training data");
}

TEST(InputSetTest, SymlinksDotDotAndHardLinksReachTheSameInput) {
  Inputs in;
  fs::create_directory_symlink(in.dir / "data/train", in.dir / "alias");
  fs::create_directories(in.dir / "other");
  fs::create_hard_link(in.dir / "data/train/shard-00000.stk", in.dir / "other/hard.stk");
  fs::create_symlink(in.dir / "model.pt", in.dir / "model-link.pt");
  expect_refused(in.check(in.dir / "alias/manifest.json"), "a file of the training data");
  expect_refused(in.check(in.dir / "alias/new.json"), "is inside the training data");
  expect_refused(in.check(in.dir / "other/../data/train/x"), "is inside the training data");
  expect_refused(in.check(in.dir / "other/hard.stk"), "a file of the training data");
  expect_refused(in.check(in.dir / "model-link.pt"), "a file of the model");
  // Relative to the working directory too.
  const fs::path cwd = fs::current_path();
  fs::current_path(in.dir / "other");
  const Status relative = in.check("../data/train/manifest.json");
  fs::current_path(cwd);
  expect_refused(relative, "--out '../data/train/manifest.json' is '" +
                               (in.dir / "data/train/manifest.json") +
                               "', a file of the training data");
}

TEST(InputSetTest, MissingInputsAreIgnored) {
  testing::TempDir dir;
  InputSet set;
  set.add_tree(dir / "absent", "the data");
  set.add_file(dir / "absent.pt", "the model");
  EXPECT_TRUE(set.check_output("--trace", dir / "absent.pt").is_ok());
  EXPECT_TRUE(set.check_output("--trace", dir / "absent/x").is_ok());
}

}  // namespace
}  // namespace stoker
