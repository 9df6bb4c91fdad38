#include "stoker/util/output_set.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

void expect_clash(const Status& status, const std::vector<std::string>& words) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
  for (const std::string& w : words)
    EXPECT_NE(status.message().find(w), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find('\n'), std::string::npos) << "one line";
}

TEST(OutputSetTest, DistinctOutputsAreAccepted) {
  testing::TempDir dir;
  OutputSet outputs;
  EXPECT_TRUE(outputs.add_dir("--checkpoint-dir", dir / "ck", {"LATEST", "step-*"}).is_ok());
  EXPECT_TRUE(outputs.add_dir("--report", dir / "ck", {"index.html", "report.json"}).is_ok());
  EXPECT_TRUE(outputs.add_file("--log", dir / "ck/train.jsonl").is_ok());
  EXPECT_TRUE(outputs.add_file("--trace", dir / "trace.json").is_ok());
  EXPECT_TRUE(outputs.add_file("--save-model", "").is_ok());
}

TEST(OutputSetTest, TwoFilesOfOnePathAreRefusedNamingBoth) {
  testing::TempDir dir;
  OutputSet outputs;
  ASSERT_TRUE(outputs.add_file("--log", dir / "h.jsonl").is_ok());
  expect_clash(outputs.add_file("--trace", dir / "sub/../h.jsonl"),
               {"--log '" + dir / "h.jsonl'", "--trace", "same file"});
}

TEST(OutputSetTest, AHardLinkIsTheSameFile) {
  testing::TempDir dir;
  ASSERT_TRUE(write_file_atomically(dir / "a", "x").is_ok());
  fs::create_hard_link(dir / "a", dir / "b");
  OutputSet outputs;
  ASSERT_TRUE(outputs.add_file("--log", dir / "a").is_ok());
  expect_clash(outputs.add_file("--save-model", dir / "b"), {"--log", "--save-model"});
}

TEST(OutputSetTest, AFileADirectoryOutputWritesIsRefusedEitherOrder) {
  testing::TempDir dir;
  OutputSet first_dir;
  ASSERT_TRUE(first_dir.add_dir("--checkpoint-dir", dir / "ck", {"LATEST", "step-*"}).is_ok());
  expect_clash(first_dir.add_file("--save-model", dir / "ck/LATEST"),
               {"--save-model '" + dir / "ck/LATEST'", "--checkpoint-dir '" + dir / "ck'"});
  expect_clash(first_dir.add_file("--log", dir / "ck/step-3"), {"--log", "--checkpoint-dir"});
  OutputSet first_file;
  ASSERT_TRUE(first_file.add_file("--trace", dir / "r/index.html").is_ok());
  expect_clash(first_file.add_dir("--report", dir / "r/", {"index.html", "report.json"}),
               {"--trace", "--report"});
}

TEST(OutputSetTest, AFileAtADirectoryOutputsPathIsRefused) {
  testing::TempDir dir;
  OutputSet outputs;
  ASSERT_TRUE(outputs.add_dir("--report", dir / "r", {"index.html"}).is_ok());
  expect_clash(outputs.add_file("--log", dir / "r"), {"--report", "--log"});
}

TEST(OutputSetTest, DirectoriesWritingOneNameAreRefused) {
  testing::TempDir dir;
  OutputSet outputs;
  ASSERT_TRUE(outputs.add_dir("--a", dir / "d", {"step-*"}).is_ok());
  expect_clash(outputs.add_dir("--b", dir / "d", {"step-9"}), {"--a", "--b", "step-9"});
}

TEST(OutputSetTest, ALinkedParentIsResolvedByTheKernel) {
  testing::TempDir dir;
  fs::create_directories(dir / "elsewhere/a/b");
  fs::create_directory_symlink(dir / "elsewhere/a/b", dir / "hop");
  OutputSet outputs;
  ASSERT_TRUE(outputs.add_file("--log", dir / "elsewhere/a/x.jsonl").is_ok());
  // hop/.. is elsewhere/a to the kernel, not the directory that holds hop.
  expect_clash(outputs.add_file("--trace", dir / "hop/../x.jsonl"), {"--log", "--trace"});
  EXPECT_TRUE(outputs.add_file("--save-model", dir / "x.jsonl").is_ok());
}

}  // namespace
}  // namespace stoker
