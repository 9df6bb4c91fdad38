#pragma once
// The report of `stoker train --report DIR`: the samples/s over time, recorded through
// TrainerOptions::on_batch while the run trains, then the finished epochs' step-time split and
// their loss and accuracy curves. No verdict or actions (`stoker doctor` measures for those).
// Not thread-safe: on_batch() is called on the training thread, report() after run().

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stoker/doctor/run_report.h"
#include "stoker/doctor/throughput_recorder.h"
#include "stoker/train/trainer.h"

namespace stoker::cli {

class TrainReportRecorder {
 public:
  // `samples_per_batch`: one training batch's samples, all ranks together; `accum`: batches
  // per optimizer step.
  TrainReportRecorder(int64_t samples_per_batch, int64_t accum);

  // TrainerOptions::on_batch: the batches done so far in the epoch (a count that does not grow
  // starts the next epoch).
  void on_batch(int64_t batches_done);

  // The report of `result`: `facts` (the run's configuration), then the split per optimizer
  // step over its finished epochs (data wait, host to device, compute, and in a distributed run
  // the all-reduce time backward did not hide), throughput over time, the loss per epoch (train
  // and, when evaluated, test) and the test accuracy per epoch.
  RunReport report(const TrainResult& result,
                   std::vector<std::pair<std::string, std::string>> facts) const;

 private:
  const int64_t samples_per_batch_;
  const int64_t accum_;
  ThroughputRecorder throughput_;
  int64_t last_batches_done_ = -1;      // the last on_batch() value; -1 before the first
  int64_t batches_ = 0;                 // trained (timed) in the run
  std::vector<int64_t> epoch_batches_;  // trained in each epoch the run entered
};

}  // namespace stoker::cli
