#include "stoker/doctor/run_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "stoker/doctor/report_samples.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker::test {
namespace {

using nlohmann::json;
using stoker::testing::TempDir;

TEST(RunReportJsonTest, HoldsEveryField) {
  const json j = json::parse(run_report_json(sample_report()));
  EXPECT_EQ(j.at("title"), "stoker doctor");
  EXPECT_EQ(j.at("command"), "stoker doctor --data /data/fmnist --workers 1");
  EXPECT_EQ(j.at("facts"), json::parse(R"([["model", "mlp"], ["workers", "1"]])"));
  EXPECT_EQ(j.at("verdict"), "data-bound");
  EXPECT_EQ(j.at("verdict_reason"), "The device waited for data 71% of the step.");
  EXPECT_EQ(j.at("split").size(), 3u);
  EXPECT_EQ(j.at("split")[2].at("name"), "compute");
  EXPECT_DOUBLE_EQ(j.at("split")[2].at("seconds").get<double>(), 0.010);
  EXPECT_EQ(j.at("actions")[0].at("expected_gain"), "about 2.5x");
  EXPECT_EQ(j.at("actions")[1].at("why"), "");
  const json& chart = j.at("charts").at(1);
  EXPECT_EQ(chart.at("x_label"), "epoch");
  EXPECT_EQ(chart.at("series").size(), 2u);
  const json& points = chart.at("series").at(0).at("points");
  EXPECT_EQ(points[0], json::parse("[1, 0.5]"));
  EXPECT_TRUE(points[1][1].is_null());  // NaN has no JSON spelling
}

TEST(RunReportJsonTest, BadUtf8IsReplaced) {
  RunReport r;
  r.title = "bad \xff\xfe bytes";
  const json j = json::parse(run_report_json(r));
  EXPECT_NE(j.at("title").get<std::string>().find("bad "), std::string::npos);
}

TEST(WriteReportTest, WritesThePageAndItsData) {
  TempDir tmp;
  const std::string dir = tmp / "report";  // made: its parent exists
  ASSERT_TRUE(write_report(sample_report(), dir).is_ok());
  const std::string html = read_file(dir + "/index.html").value_or_throw();
  EXPECT_EQ(html, render_html_report(sample_report()));
  const std::string data = read_file(dir + "/report.json").value_or_throw();
  EXPECT_EQ(data, run_report_json(sample_report()));
  // Written again over the first: replaced, and no temporary left.
  RunReport second = sample_report();
  second.title = "second";
  ASSERT_TRUE(write_report(second, dir).is_ok());
  EXPECT_EQ(json::parse(read_file(dir + "/report.json").value_or_throw()).at("title"), "second");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 2);
}

TEST(WriteReportTest, BadDirectoriesAreNamed) {
  TempDir tmp;
  const std::string file = tmp / "file";
  ASSERT_TRUE(write_file_atomically(file, "x").is_ok());
  for (const auto& write : {write_report, +[](const RunReport&, const std::string& d) {
                              return check_report_dir(d);
                            }}) {
    Status s = write(sample_report(), file);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(file), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("not a directory"), std::string::npos) << s.message();

    s = write(sample_report(), file + "/below");
    EXPECT_EQ(s.code(), StatusCode::kIoError);
    EXPECT_NE(s.message().find(file + "/below"), std::string::npos) << s.message();

    s = write(sample_report(), "");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  }
  // The page's own name taken by a directory.
  const std::string dir = tmp / "taken";
  std::filesystem::create_directories(dir + "/index.html");
  for (Status s : {write_report(sample_report(), dir), check_report_dir(dir)}) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(dir + "/index.html"), std::string::npos) << s.message();
  }
}

// Only a report stoker wrote is replaced: a user's page or JSON of the same name is kept.
TEST(WriteReportTest, AUsersFilesAreNeverReplaced) {
  TempDir tmp;
  for (const char* name : {"index.html", "report.json"}) {
    const std::string dir = tmp / name + ".d";
    std::filesystem::create_directory(dir);
    ASSERT_TRUE(write_file_atomically(dir + "/" + name, "<p>my notes</p>").is_ok());
    for (Status s : {check_report_dir(dir), write_report(sample_report(), dir)}) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(s.message(), dir + "/" + name +
                                 ": not a report stoker wrote, so it is kept: give another "
                                 "directory, or move the file");
    }
    EXPECT_EQ(read_file(dir + "/" + name).value_or_throw(), "<p>my notes</p>");
  }
}

TEST(CheckReportDirTest, CreatesTheDirectoryAndLeavesNothingElse) {
  TempDir tmp;
  const std::string dir = tmp / "a";
  ASSERT_TRUE(check_report_dir(dir).is_ok());
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  ASSERT_TRUE(check_report_dir(dir).is_ok());  // an existing directory is fine too
}

// As for an output file, a missing parent is an error, not created.
TEST(CheckReportDirTest, AMissingParentIsRefusedNotCreated) {
  TempDir tmp;
  for (Status s : {check_report_dir(tmp / "a/b/c"), write_report(sample_report(), tmp / "a/b/c")}) {
    EXPECT_EQ(s.code(), StatusCode::kIoError);
    EXPECT_EQ(s.message(), "cannot create report directory " + tmp / "a/b/c" +
                               ": no such directory " + tmp / "a/b");
  }
  EXPECT_FALSE(std::filesystem::exists(tmp / "a"));
}

}  // namespace
}  // namespace stoker::test
