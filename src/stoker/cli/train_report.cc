#include "cli/train_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "cli/run_output_options.h"

namespace stoker::cli {

TrainReportRecorder::TrainReportRecorder(int64_t samples_per_batch, int64_t accum)
    : samples_per_batch_(samples_per_batch), accum_(accum) {}

void TrainReportRecorder::on_batch(int64_t batches_done) {
  if (last_batches_done_ < 0 || batches_done <= last_batches_done_) {  // an epoch's timing starts
    epoch_batches_.push_back(0);
    throughput_.restart(batches_ * samples_per_batch_);
  } else {
    batches_ += batches_done - last_batches_done_;
    epoch_batches_.back() += batches_done - last_batches_done_;
    throughput_.record(batches_ * samples_per_batch_);
  }
  last_batches_done_ = batches_done;
}

RunReport TrainReportRecorder::report(
    const TrainResult& result, std::vector<std::pair<std::string, std::string>> facts) const {
  RunReport r;
  r.title = "stoker train";
  r.command = command_line();
  r.facts = std::move(facts);
  if (result.reason == StopReason::kStopRequested) {
    r.facts.emplace_back("stopped",
                         fmt::format("on request, in epoch {} after step {} ({} epochs finished)",
                                     result.epoch, result.steps, result.epochs.size()));
  }
  r.facts.emplace_back("time", fmt::format("{:.1f} s", result.seconds));
  if (!result.epochs.empty()) {
    r.facts.emplace_back("samples/s", fmt::format("{:.0f} (training, last epoch)",
                                                  result.epochs.back().samples_per_second()));
  }
  std::optional<int64_t> device_peak;
  for (const EpochMetrics& m : result.epochs) {
    if (m.device_peak_bytes) device_peak = std::max(device_peak.value_or(0), *m.device_peak_bytes);
  }
  if (device_peak) {
    r.facts.emplace_back("device memory",
                         fmt::format("{} at most (peak allocated, over the epochs)",
                                     human_bytes(static_cast<double>(*device_peak))));
  }

  // The split: the finished epochs' times over their optimizer steps.
  double data = 0, h2d = 0, compute = 0, exposed = 0;
  int64_t batches = 0;
  bool distributed = false;
  for (size_t e = 0; e < result.epochs.size() && e < epoch_batches_.size(); ++e) {
    const EpochMetrics& m = result.epochs[e];
    data += m.data_seconds;
    h2d += m.h2d_seconds;
    compute += m.compute_seconds - m.allreduce_exposed_seconds;
    exposed += m.allreduce_exposed_seconds;
    distributed = distributed || m.allreduces.has_value();
    batches += epoch_batches_[e];
  }
  if (batches > 0) {
    const double steps = static_cast<double>(batches) / accum_;
    r.split = {{"data wait", data / steps},
               {"host to device", h2d / steps},
               {"compute (forward, backward, optimizer)", compute / steps}};
    if (distributed) r.split.push_back({"all-reduce not hidden by backward", exposed / steps});
  }

  r.charts.push_back({"Throughput over time",
                      "seconds since training started",
                      "samples/s",
                      {{"training (all ranks)", throughput_.points()}}});
  ReportSeries train_loss{"train", {}}, test_loss{"test", {}}, accuracy{"test", {}},
      videos{"test videos (their clips' softmax summed)", {}};
  for (const EpochMetrics& m : result.epochs) {
    const double epoch = static_cast<double>(m.epoch);
    train_loss.points.push_back({epoch, m.train_loss});
    if (m.test_loss) test_loss.points.push_back({epoch, *m.test_loss});
    if (m.test_accuracy) accuracy.points.push_back({epoch, 100 * *m.test_accuracy});
    if (m.test_video_accuracy) videos.points.push_back({epoch, 100 * *m.test_video_accuracy});
  }
  ReportChart loss{"Loss", "epoch", "mean loss per sample", {train_loss}};
  if (!test_loss.points.empty()) loss.series.push_back(test_loss);
  r.charts.push_back(loss);
  if (!accuracy.points.empty()) {
    ReportChart chart{"Test accuracy", "epoch", "accuracy (%)", {accuracy}};
    if (!videos.points.empty()) chart.series.push_back(videos);
    r.charts.push_back(chart);
  }
  return r;
}

}  // namespace stoker::cli
