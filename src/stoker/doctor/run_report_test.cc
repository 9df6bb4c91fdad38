#include "stoker/doctor/run_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"

namespace stoker::test {
namespace {

using nlohmann::json;
using stoker::testing::TempDir;

RunReport small_report() {
  RunReport r;
  r.title = "stoker train";
  r.command = "stoker train --epochs 2";
  r.facts = {{"epochs", "2"}, {"batch", "64"}};
  r.verdict = "compute-bound";
  r.verdict_reason = "compute is 80% of the step";
  r.split = {{"data wait", 0.001}, {"compute", 0.004}};
  r.actions = {{"--amp bf16", "matmuls dominate", "1.3x"}};
  r.charts = {{"Loss", "epoch", "loss", {{"train", {{1, 0.5}, {2, std::nan("")}}}}}};
  return r;
}

TEST(RunReportJsonTest, HoldsEveryField) {
  const json j = json::parse(run_report_json(small_report()));
  EXPECT_EQ(j.at("title"), "stoker train");
  EXPECT_EQ(j.at("command"), "stoker train --epochs 2");
  EXPECT_EQ(j.at("facts"), json::parse(R"([["epochs", "2"], ["batch", "64"]])"));
  EXPECT_EQ(j.at("verdict"), "compute-bound");
  EXPECT_EQ(j.at("verdict_reason"), "compute is 80% of the step");
  EXPECT_EQ(j.at("split").size(), 2u);
  EXPECT_EQ(j.at("split")[1].at("name"), "compute");
  EXPECT_DOUBLE_EQ(j.at("split")[1].at("seconds").get<double>(), 0.004);
  EXPECT_EQ(j.at("actions")[0].at("expected_gain"), "1.3x");
  const json& chart = j.at("charts").at(0);
  EXPECT_EQ(chart.at("x_label"), "epoch");
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
  const std::string dir = tmp / "nested/report";
  ASSERT_TRUE(write_report(small_report(), dir).is_ok());
  const std::string html = read_file(dir + "/index.html").value_or_throw();
  EXPECT_EQ(html, render_html_report(small_report()));
  const std::string data = read_file(dir + "/report.json").value_or_throw();
  EXPECT_EQ(data, run_report_json(small_report()));
  // Written again over the first: replaced, and no temporary left.
  RunReport second = small_report();
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
    Status s = write(small_report(), file);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(file), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("not a directory"), std::string::npos) << s.message();

    s = write(small_report(), file + "/below");
    EXPECT_EQ(s.code(), StatusCode::kIoError);
    EXPECT_NE(s.message().find(file + "/below"), std::string::npos) << s.message();

    s = write(small_report(), "");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  }
  // The page's own name taken by a directory.
  const std::string dir = tmp / "taken";
  std::filesystem::create_directories(dir + "/index.html");
  for (Status s : {write_report(small_report(), dir), check_report_dir(dir)}) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(dir + "/index.html"), std::string::npos) << s.message();
  }
}

TEST(CheckReportDirTest, CreatesTheDirectoryAndLeavesNothingElse) {
  TempDir tmp;
  const std::string dir = tmp / "a/b";
  ASSERT_TRUE(check_report_dir(dir).is_ok());
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  ASSERT_TRUE(check_report_dir(dir).is_ok());  // an existing directory is fine too
}

}  // namespace
}  // namespace stoker::test
