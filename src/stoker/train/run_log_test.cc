#include "stoker/train/run_log.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "stoker/testing/special_files.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

TEST(RunLogTest, AppendsLinesToNewOrRegularFilesOnly) {
  testing::TempDir dir;
  {
    RunLog log = RunLog::open(dir / "log.jsonl").value_or_throw();
    ASSERT_TRUE(log.append("epoch", R"({"epoch": 1})").is_ok());
  }
  RunLog again = RunLog::open(dir / "log.jsonl").value_or_throw();
  ASSERT_TRUE(again.append("step", R"({"step": 2})").is_ok());
  ASSERT_TRUE(again.append("run", "{}").is_ok());
  EXPECT_EQ(again.append("run", "[1]").code(), StatusCode::kInvalidArgument);
  std::vector<nlohmann::json> records;
  std::istringstream lines(read_file(dir / "log.jsonl").value_or_throw());
  for (std::string line; std::getline(lines, line);) records.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0]["record"], "epoch");
  EXPECT_EQ(records[0]["epoch"], 1);
  EXPECT_EQ(records[1]["record"], "step");
  EXPECT_EQ(records[1]["step"], 2);
  EXPECT_EQ(records[2].size(), 2u);  // record and time
  const std::string time = records[2]["time"];
  EXPECT_EQ(time.size(), 24u) << time;  // 2024-05-01T12:34:56.789Z
  EXPECT_EQ(time[10], 'T');
  EXPECT_EQ(time.back(), 'Z');
  EXPECT_LE(records[0]["time"].get<std::string>(), time);

  testing::make_fifo(dir / "fifo");
  for (const std::string& path : {std::string("/dev/full"), dir / "fifo", dir.path()}) {
    Result<RunLog> refused = RunLog::open(path);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << path;
    EXPECT_NE(refused.status().message().find(path + ": a "), std::string::npos)
        << refused.status().message();
  }
  EXPECT_EQ(RunLog::open(dir / "none/log.jsonl").status().code(), StatusCode::kIoError);
}

// A file size limit of `bytes` while it lives (a full disk's stand-in; SIGXFSZ ignored).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) : old_handler_(std::signal(SIGXFSZ, SIG_IGN)) {
    EXPECT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit_), 0);
    struct rlimit small = old_limit_;
    small.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_limit_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  struct rlimit old_limit_ {};
  void (*old_handler_)(int);
};

// A write the system refuses fails with a message: a file size limit stands in for a full disk.
TEST(RunLogTest, AWriteErrorIsAStatus) {
  testing::TempDir dir;
  RunLog log = RunLog::open(dir / "log.jsonl").value_or_throw();
  Status first, second;
  {
    FileSizeLimit limit(100);
    first = log.append("step", "{\"x\":\"" + std::string(20, 'x') + "\"}");
    second = log.append("step", "{\"y\":\"" + std::string(200, 'y') + "\"}");
  }
  EXPECT_TRUE(first.is_ok()) << first.message();
  EXPECT_EQ(second.code(), StatusCode::kIoError);
  EXPECT_NE(
      second.message().find("cannot write log file '" + (dir / "log.jsonl") + "': File too large"),
      std::string::npos)
      << second.message();
}

// Every line of the log at `path` parses as a JSON object.
void expect_whole_lines(const std::string& path, size_t lines_expected) {
  std::istringstream lines(read_file(path).value_or_throw());
  size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_TRUE(j.is_object()) << "torn line " << n << ": " << line;
  }
  EXPECT_EQ(n, lines_expected);
}

// A write cut short by a full disk (a file size limit stands in) leaves no partial line: the
// next record, of this run or the next, starts on a line of its own.
TEST(RunLogTest, AWriteCutShortLeavesNoPartialLine) {
  testing::TempDir dir;
  const std::string path = dir / "log.jsonl";
  {
    RunLog log = RunLog::open(path).value_or_throw();
    Status first, cut;
    {
      FileSizeLimit limit(100);
      first = log.append("step", "{\"x\":1}");
      cut = log.append("step", "{\"y\":\"" + std::string(200, 'y') + "\"}");
    }
    ASSERT_TRUE(first.is_ok()) << first.message();
    ASSERT_FALSE(cut.is_ok());
    ASSERT_TRUE(log.append("epoch", "{\"epoch\":1}").is_ok());
  }
  expect_whole_lines(path, 2);
}

// A log that ends in a torn line (a crash mid-write) is cut back to its last newline when it is
// opened again, so that the next record is not appended onto the torn one.
TEST(RunLogTest, ATornLastLineIsCutWhenTheLogIsOpened) {
  testing::TempDir dir;
  const std::string path = dir / "log.jsonl";
  ASSERT_TRUE(write_file_atomically(path, "{\"record\":\"run\"}\n{\"record\":\"ep").is_ok());
  {
    RunLog log = RunLog::open(path).value_or_throw();
    ASSERT_TRUE(log.append("epoch", "{\"epoch\":1}").is_ok());
  }
  expect_whole_lines(path, 2);
  ASSERT_TRUE(write_file_atomically(path, "{\"record\":\"ru").is_ok());  // no newline at all
  ASSERT_TRUE(RunLog::open(path).value_or_throw().append("run", "{}").is_ok());
  expect_whole_lines(path, 1);
}

// A file that is not a log (`--log notes.txt`) is neither appended to nor cut (its last line
// without a newline would otherwise be taken for a torn record): refused, naming the line.
TEST(RunLogTest, AFileThatIsNotALogIsKept) {
  testing::TempDir dir;
  const std::string path = dir / "notes.txt";
  const std::string run = "{\"record\":\"run\"}\n";
  const std::vector<std::pair<std::string, int>> notes = {{"buy milk\n", 1},
                                                          {"no newline", 1},
                                                          {run + "notes\n", 2},
                                                          {run + "\n", 2},
                                                          {"{\"record\":\"run\"\n", 1}};
  for (const auto& [text, line] : notes) {
    ASSERT_TRUE(write_file_atomically(path, text).is_ok());
    for (Status s : {RunLog::open(path).status(), RunLog::trim_for_resume(path, 0)}) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << text;
      EXPECT_EQ(s.message().rfind(
                    fmt::format("{} is not a stoker log (line {} is not a record", path, line), 0),
                0u)
          << s.message();
    }
    EXPECT_EQ(read_file(path).value_or_throw(), text);
  }
  for (const std::string& text : {std::string(), run + "{\"rec"}) {  // empty; a torn record
    ASSERT_TRUE(write_file_atomically(path, text).is_ok());
    EXPECT_TRUE(RunLog::check(path).is_ok()) << text;
  }
}

TEST(RunLogTest, TrimForResumeDropsWhatTheCheckpointDoesNotHold) {
  testing::TempDir dir;
  const std::string path = dir / "log.jsonl";
  const std::string kept =
      "{\"record\":\"run\"}\n{\"record\":\"epoch\",\"steps\":10}\n"
      "{\"record\":\"epoch\",\"steps\":20}\n";
  // A crash after epoch 3's record but before its checkpoint, mid-way through a step record.
  ASSERT_TRUE(write_file_atomically(path, kept + "{\"record\":\"epoch\",\"steps\":30}\n"
                                                 "{\"record\":\"step\",\"step\":31}\n"
                                                 "{\"record\":\"st")
                  .is_ok());
  ASSERT_TRUE(RunLog::trim_for_resume(path, 20).is_ok());
  EXPECT_EQ(read_file(path).value_or_throw(), kept);
  ASSERT_TRUE(RunLog::trim_for_resume(path, 20).is_ok());  // nothing more to drop
  EXPECT_EQ(read_file(path).value_or_throw(), kept);
  ASSERT_TRUE(RunLog::trim_for_resume(path, 0).is_ok());
  EXPECT_EQ(read_file(path).value_or_throw(), "{\"record\":\"run\"}\n");
  EXPECT_TRUE(RunLog::trim_for_resume(dir / "missing.jsonl", 5).is_ok());
  EXPECT_FALSE(std::filesystem::exists(dir / "missing.jsonl"));
}

}  // namespace
}  // namespace stoker
