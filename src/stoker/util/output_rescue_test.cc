#include "stoker/util/output_rescue.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

Status write_text(const std::string& path) { return write_file_atomically(path, "result"); }

TEST(OutputRescueTest, AWorkingPathIsWrittenAndNothingElse) {
  testing::TempDir dir;
  int writes = 0;
  std::string written_to = "stale";
  const Status status = write_or_rescue(
      "the model", dir / "m.pt",
      [&](const std::string& p) {
        ++writes;
        return write_text(p);
      },
      &written_to);
  EXPECT_EQ(written_to, dir / "m.pt");
  EXPECT_TRUE(status.is_ok()) << status.message();
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(read_file(dir / "m.pt").value_or_throw(), "result");
}

TEST(OutputRescueTest, AFailingPathLeavesTheResultInTheTemporaryDirectoryAndSaysWhere) {
  testing::TempDir dir;
  testing::TempDir tmp;
  ::setenv("TMPDIR", tmp.path().c_str(), 1);
  std::string written_to;
  const Status status =
      write_or_rescue("the trained model", dir / "gone/m.pt", write_text, &written_to);
  ::unsetenv("TMPDIR");
  ASSERT_FALSE(status.is_ok());
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  const std::string& message = status.message();
  const std::string says = "; the trained model was saved to ";
  const size_t at = message.find(says);
  ASSERT_NE(at, std::string::npos) << message;
  EXPECT_EQ(message.find(dir / "gone/m.pt"), 0u) << "the first failure comes first: " << message;
  const std::string rescue = message.substr(
      at + says.size(), message.size() - at - says.size() - std::string(" instead").size());
  EXPECT_EQ(fs::path(rescue).parent_path().parent_path(), fs::path(tmp.path()));
  EXPECT_EQ(fs::path(rescue).filename(), "m.pt");
  EXPECT_EQ(read_file(rescue).value_or_throw(), "result");
  EXPECT_EQ(written_to, rescue);
}

TEST(OutputRescueTest, WhenTheRescueFailsTooBothAreSaidAndNothingIsLeft) {
  testing::TempDir tmp;
  ::setenv("TMPDIR", tmp.path().c_str(), 1);
  std::string written_to = "stale";
  const Status status = write_or_rescue(
      "the report", "/nonexistent/dir/report",
      [](const std::string& p) { return io_error(p + ": no"); }, &written_to);
  EXPECT_EQ(written_to, "");
  ::unsetenv("TMPDIR");
  EXPECT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("could not be saved elsewhere either"), std::string::npos)
      << status.message();
  EXPECT_TRUE(fs::is_empty(tmp.path())) << "the rescue directory is removed";
}

}  // namespace
}  // namespace stoker
