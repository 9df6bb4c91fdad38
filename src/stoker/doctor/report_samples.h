#pragma once
// Test helpers for the report's suites: a small report with every part, and counting in text.

#include <cmath>
#include <string>

#include "stoker/doctor/run_report.h"

namespace stoker::test {

// A doctor's report with every part: facts, a verdict, a split with an empty part, an action
// with and one without reason and gain, two charts (one point of the loss is NaN).
inline RunReport sample_report() {
  RunReport r;
  r.title = "stoker doctor";
  r.command = "stoker doctor --data /data/fmnist --workers 1";
  r.facts = {{"model", "mlp"}, {"workers", "1"}};
  r.verdict = "data-bound";
  r.verdict_reason = "The device waited for data 71% of the step.";
  r.split = {{"data wait", 0.030}, {"h2d", 0.0}, {"compute", 0.010}};
  r.actions = {{"--workers 4", "one worker is busy 100% of the time", "about 2.5x"},
               {"--uint8", "", ""}};
  r.charts = {
      {"Throughput", "seconds", "samples/s", {{"train", {{1, 100}, {2, 120}}}}},
      {"Loss", "epoch", "loss", {{"train", {{1, 0.5}, {2, std::nan("")}}}, {"test", {{1, 0.6}}}}}};
  return r;
}

// Occurrences of `needle` in `text`.
inline size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace stoker::test
