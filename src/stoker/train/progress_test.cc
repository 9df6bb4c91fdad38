#include "stoker/train/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

namespace stoker {
namespace {

// Everything written to a temporary FILE, for checking what Progress prints.
class Capture {
 public:
  Capture() : file_(std::tmpfile()) {}
  ~Capture() { std::fclose(file_); }
  std::FILE* file() { return file_; }
  std::string text() {
    std::fflush(file_);
    std::rewind(file_);
    std::string text;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), file_)) > 0) text.append(buffer, n);
    return text;
  }

 private:
  std::FILE* file_;
};

EpochMetrics sample_metrics() {
  EpochMetrics m;
  m.epoch = 2;
  m.epochs = 5;
  m.steps = 1876;
  m.lr = 1e-3;
  m.train_loss = 0.41234;
  m.samples = 60000;
  m.seconds = 2.0;
  m.data_seconds = 0.25;
  m.h2d_seconds = 0.0;
  m.compute_seconds = 1.75;
  return m;
}

TEST(ProgressTest, HumanUnits) {
  EXPECT_EQ(human_rate(950), "950");
  EXPECT_EQ(human_rate(12345), "12.3k");
  EXPECT_EQ(human_rate(2.5e6), "2.5M");
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(3.14e6), "3.1 MB");
  EXPECT_EQ(human_bytes(999.99e9), "1.0 TB");
  EXPECT_EQ(human_bytes(7.888e12), "7.9 TB");
  EXPECT_EQ(human_duration(42.4), "42 s");
  EXPECT_EQ(human_duration(185), "3:05");
  EXPECT_EQ(human_duration(3723), "1:02:03");
  EXPECT_EQ(human_duration(-3), "0 s");
}

TEST(ProgressTest, ProgressBarFillsInProportionAndStaysInItsWidth) {
  EXPECT_EQ(progress_bar(0, 10), "[" + std::string(24, '.') + "]");
  EXPECT_EQ(progress_bar(1, 2), "[" + std::string(12, '#') + std::string(12, '.') + "]");
  EXPECT_EQ(progress_bar(10, 10), "[" + std::string(24, '#') + "]");
  EXPECT_EQ(progress_bar(15, 10), progress_bar(10, 10));
  EXPECT_EQ(progress_bar(-1, 10), progress_bar(0, 10));
  EXPECT_EQ(progress_bar(0, 0), progress_bar(0, 10));
}

TEST(ProgressTest, EpochLineShowsLossesRateAndTimeSplit) {
  EpochMetrics m = sample_metrics();
  EXPECT_DOUBLE_EQ(m.samples_per_second(), 30000);
  EXPECT_EQ(m.to_line(),
            "epoch 2/5  train loss 0.4123  30.0k samples/s  2.00 s (data 0.25 s, h2d 0.00 s, "
            "compute 1.75 s)");
  m.test_loss = 0.5;
  m.test_accuracy = 0.875;
  EXPECT_NE(m.to_line().find("test loss 0.5000  test acc 0.8750"), std::string::npos)
      << m.to_line();
  EXPECT_EQ(m.to_line().find("all-reduce"), std::string::npos);
  m.allreduces = 938;
  m.allreduce_seconds = 0.5;
  m.allreduce_exposed_seconds = 0.125;
  EXPECT_NE(m.to_line().find("  all-reduce 0.50 s (0.12 s not overlapped)"), std::string::npos)
      << m.to_line();
  EXPECT_EQ(m.to_line().find("device peak"), std::string::npos);
  m.device_peak_bytes = 3140000000;
  EXPECT_NE(m.to_line().find("  device peak 3.1 GB"), std::string::npos) << m.to_line();
  EXPECT_EQ(EpochMetrics().samples_per_second(), 0);
}

TEST(ProgressTest, EpochJsonHasEveryMeasurementOnOneLine) {
  EpochMetrics m = sample_metrics();
  const std::string text = m.to_json();
  EXPECT_EQ(text.find('\n'), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["epoch"], 2);
  EXPECT_EQ(j["steps"], 1876);
  EXPECT_EQ(j["samples"], 60000);
  EXPECT_DOUBLE_EQ(j["train_loss"].get<double>(), 0.41234);
  EXPECT_DOUBLE_EQ(j["samples_per_second"].get<double>(), 30000);
  EXPECT_DOUBLE_EQ(j["data_seconds"].get<double>(), 0.25);
  EXPECT_FALSE(j.contains("test_accuracy"));
  EXPECT_FALSE(j.contains("allreduces"));
  EXPECT_FALSE(j.contains("device_peak_bytes"));

  m.test_loss = 0.5;
  m.test_accuracy = 0.875;
  m.device_peak_bytes = int64_t{1} << 40;
  j = nlohmann::json::parse(m.to_json());
  EXPECT_EQ(j["device_peak_bytes"].get<int64_t>(), int64_t{1} << 40);
  EXPECT_DOUBLE_EQ(j["test_accuracy"].get<double>(), 0.875);
  EXPECT_DOUBLE_EQ(j["test_loss"].get<double>(), 0.5);

  m.allreduces = 938;
  m.allreduce_seconds = 0.5;
  m.allreduce_exposed_seconds = 0.125;
  j = nlohmann::json::parse(m.to_json());
  EXPECT_EQ(j["allreduces"], 938);
  EXPECT_DOUBLE_EQ(j["allreduce_seconds"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["allreduce_exposed_seconds"].get<double>(), 0.125);
}

TEST(ProgressTest, LinesStyleWritesPlainLinesWithBatchLossAndEta) {
  Capture out;
  Progress progress(out.file(), ProgressStyle::kLines, std::chrono::seconds(0));
  progress.start_epoch(1, 3, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  progress.update(4, 0.75, 256);
  progress.print("done");
  const std::string text = out.text();
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(text.substr(0, 30), "epoch 1/3  batch 4/10  loss 0.") << text;
  EXPECT_NE(text.find("samples/s  ETA "), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 5), "done\n") << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
}

TEST(ProgressTest, LinesStyleWaitsForTheInterval) {
  Capture out;
  Progress progress(out.file(), ProgressStyle::kLines, std::chrono::hours(1));
  progress.start_epoch(1, 1, 100);
  for (int i = 1; i <= 100; ++i) progress.update(i, 1.0, i * 8);
  EXPECT_EQ(out.text(), "");
}

TEST(ProgressTest, BarRedrawsInPlaceAndIsClearedBeforeALine) {
  Capture out;
  Progress progress(out.file(), ProgressStyle::kBar);
  progress.start_epoch(2, 5, 8);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  progress.update(4, 0.5, 256);
  progress.print("epoch 2/5 summary");
  const std::string text = out.text();
  EXPECT_EQ(text.rfind("\r\033[Kepoch 2/5 [############............] 4/8  loss 0.5000", 0), 0u)
      << text;
  EXPECT_NE(text.find("\r\033[Kepoch 2/5 summary\n"), std::string::npos) << text;
}

TEST(ProgressTest, OffAndNullPrintNothingLive) {
  Capture out;
  Progress off(out.file(), ProgressStyle::kOff, std::chrono::seconds(0));
  off.start_epoch(1, 1, 2);
  off.update(1, 1.0, 8);
  off.print("line");
  EXPECT_EQ(out.text(), "line\n");

  Progress silent(nullptr, ProgressStyle::kLines, std::chrono::seconds(0));
  silent.start_epoch(1, 1, 2);
  silent.update(1, 1.0, 8);
  silent.print("nothing");  // must not crash
  EXPECT_EQ(default_progress_style(nullptr), ProgressStyle::kOff);
  EXPECT_EQ(default_progress_style(out.file()), ProgressStyle::kLines);
}

}  // namespace
}  // namespace stoker
