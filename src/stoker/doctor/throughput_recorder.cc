#include "stoker/doctor/throughput_recorder.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace stoker {
namespace {

// Of the time so far, the least an interval lasts.
constexpr double kIntervalFraction = 0.01;

}  // namespace

double ThroughputRecorder::steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

ThroughputRecorder::ThroughputRecorder(Clock clock, double min_interval)
    : clock_(std::move(clock)), min_interval_(min_interval) {}

void ThroughputRecorder::restart(int64_t samples) {
  const double now = clock_();
  if (!started_) start_ = now;
  started_ = true;
  last_time_ = now;
  last_samples_ = samples;
}

void ThroughputRecorder::record(int64_t samples) {
  if (!started_) return restart(samples);
  const double now = clock_();
  const double interval = now - last_time_;
  if (interval < std::max(min_interval_, kIntervalFraction * (now - start_))) return;
  points_.push_back({now - start_, static_cast<double>(samples - last_samples_) / interval});
  last_time_ = now;
  last_samples_ = samples;
}

}  // namespace stoker
