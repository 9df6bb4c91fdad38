#include "stoker/train/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>

namespace stoker {
namespace {

constexpr std::chrono::milliseconds kBarInterval(100);

}  // namespace

double EpochMetrics::samples_per_second() const {
  return seconds > 0 ? static_cast<double>(samples - resumed_samples) / seconds : 0.0;
}

std::string EpochMetrics::to_line() const {
  std::string line = fmt::format("epoch {}/{}  train loss {:.4f}", epoch, epochs, train_loss);
  if (test_loss)
    line += fmt::format("  test loss {:.4f}  test acc {:.4f}", *test_loss, *test_accuracy);
  if (test_video_accuracy) line += fmt::format("  video acc {:.4f}", *test_video_accuracy);
  line += fmt::format("  {} samples/s  {:.2f} s (data {:.2f} s, h2d {:.2f} s, compute {:.2f} s)",
                      human_rate(samples_per_second()), seconds, data_seconds, h2d_seconds,
                      compute_seconds);
  if (allreduces) {
    line += fmt::format("  all-reduce {:.2f} s ({:.2f} s not overlapped)", allreduce_seconds,
                        allreduce_exposed_seconds);
  }
  if (device_peak_bytes)
    line += "  device peak " + human_bytes(static_cast<double>(*device_peak_bytes));
  return line;
}

std::string EpochMetrics::to_json() const {
  nlohmann::json j = {{"epoch", epoch},
                      {"epochs", epochs},
                      {"steps", steps},
                      {"lr", lr},
                      {"train_loss", train_loss},
                      {"samples", samples},
                      {"seconds", seconds},
                      {"samples_per_second", samples_per_second()},
                      {"data_seconds", data_seconds},
                      {"h2d_seconds", h2d_seconds},
                      {"compute_seconds", compute_seconds}};
  if (resumed_samples > 0) j["resumed_samples"] = resumed_samples;
  if (allreduces) {
    j["allreduces"] = *allreduces;
    j["allreduce_seconds"] = allreduce_seconds;
    j["allreduce_exposed_seconds"] = allreduce_exposed_seconds;
  }
  if (device_peak_bytes) j["device_peak_bytes"] = *device_peak_bytes;
  if (test_loss) {
    j["test_loss"] = *test_loss;
    j["test_accuracy"] = *test_accuracy;
    if (test_video_accuracy) j["test_video_accuracy"] = *test_video_accuracy;
    j["eval_seconds"] = eval_seconds;
  }
  return j.dump();
}

ProgressStyle default_progress_style(std::FILE* out) {
  if (out == nullptr) return ProgressStyle::kOff;
  return ::isatty(::fileno(out)) ? ProgressStyle::kBar : ProgressStyle::kLines;
}

Progress::Progress(std::FILE* out, ProgressStyle style, std::chrono::duration<double> line_interval)
    : out_(out), style_(out ? style : ProgressStyle::kOff), interval_(line_interval) {}

void Progress::start_epoch(int64_t epoch, int64_t epochs, int64_t batches) {
  epoch_ = epoch;
  epochs_ = epochs;
  batches_ = batches;
  start_ = last_write_ = Clock::now();
}

void Progress::update(int64_t done, double loss, int64_t samples) {
  if (style_ == ProgressStyle::kOff) return;
  const Clock::time_point now = Clock::now();
  const bool bar = style_ == ProgressStyle::kBar;
  if (now - last_write_ < (bar ? std::chrono::duration<double>(kBarInterval) : interval_)) return;
  last_write_ = now;

  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double eta = done > 0 ? elapsed / static_cast<double>(done) * (batches_ - done) : 0.0;
  const std::string stats =
      fmt::format("{}/{}  loss {:.4f}  {} samples/s  ETA {}", done, batches_, loss,
                  human_rate(elapsed > 0 ? samples / elapsed : 0.0), human_duration(eta));
  if (bar) {
    write(fmt::format("\r\033[Kepoch {}/{} {} {}", epoch_, epochs_, progress_bar(done, batches_),
                      stats));
    bar_shown_ = true;
  } else {
    write(fmt::format("epoch {}/{}  batch {}\n", epoch_, epochs_, stats));
  }
}

void Progress::print(const std::string& line) {
  if (out_ == nullptr) return;
  write((bar_shown_ ? "\r\033[K" : "") + line + "\n");
  bar_shown_ = false;
}

void Progress::write(const std::string& text) {
  // A reader gone (a closed pipe: `| head`, the CLI stops the run on its SIGPIPE) or a full
  // disk costs the live output only, never the run or its checkpoint.
  if (std::fwrite(text.data(), 1, text.size(), out_) != text.size() || std::fflush(out_) != 0)
    std::clearerr(out_);
}

std::string progress_bar(int64_t done, int64_t total) {
  const int filled =
      total > 0 ? static_cast<int>(kProgressBarWidth * std::clamp<int64_t>(done, 0, total) / total)
                : 0;
  return "[" + std::string(filled, '#') + std::string(kProgressBarWidth - filled, '.') + "]";
}

std::string human_rate(double per_second) {
  if (per_second >= 1e6) return fmt::format("{:.1f}M", per_second / 1e6);
  if (per_second >= 1e3) return fmt::format("{:.1f}k", per_second / 1e3);
  return fmt::format("{:.0f}", per_second);
}

std::string human_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(seconds, 0.0)));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{}:{:02}", s / 60, s % 60);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

std::string human_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
  size_t unit = 0;
  while (bytes >= 999.95 && unit + 1 < std::size(kUnits)) {
    bytes /= 1000;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

}  // namespace stoker
