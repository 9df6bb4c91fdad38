#pragma once
// Progress: what a training run tells its user while it runs — a live bar on a terminal or
// plain periodic lines otherwise — and what one epoch measured (EpochMetrics), as the line
// printed at the epoch's end and as one JSON object for a --log FILE.jsonl.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace stoker {

// What one training epoch measured. Epochs are numbered from 1 for people.
struct EpochMetrics {
  int64_t epoch = 0;      // 1-based
  int64_t epochs = 0;     // of the run
  int64_t steps = 0;      // optimizer steps taken since the run began (all epochs)
  double lr = 0;          // learning rate of the last step
  double train_loss = 0;  // mean training loss per sample over the epoch
  int64_t samples = 0;    // training samples processed in the epoch (by all ranks together)
  // Of `samples`, those processed before the checkpoint this run resumed from (not timed here).
  int64_t resumed_samples = 0;
  // Wall time of the training pass (evaluation excluded), split into time spent waiting for the
  // loader, making the model's input on its device (the copy there and the uint8 -> float
  // normalisation, InputNormalizer), and everything else (forward, backward, step).
  double seconds = 0;
  double data_seconds = 0;
  double h2d_seconds = 0;
  double compute_seconds = 0;
  // Distributed runs: the epoch's gradient all-reduces (AllReduceStats): their count, their span
  // and the part of it backward did not hide (in compute_seconds). Unset for one process.
  std::optional<int64_t> allreduces;
  double allreduce_seconds = 0;
  double allreduce_exposed_seconds = 0;
  // CUDA: the peak bytes LibTorch held allocated on the device during the epoch (training and
  // evaluation); unset on the CPU.
  std::optional<int64_t> device_peak_bytes;
  std::optional<double> test_loss;      // mean per sample; unset if not evaluated
  std::optional<double> test_accuracy;  // in [0, 1]; unset if not evaluated
  // Videos evaluated with several clips each (TrainerOptions::eval_clips_per_video): the share
  // of videos whose clips' softmax, summed, is highest at their label; test_accuracy is then
  // the clips'. Unset otherwise.
  std::optional<double> test_video_accuracy;
  double eval_seconds = 0;

  // (samples - resumed_samples) / seconds (0 for an empty epoch).
  double samples_per_second() const;
  // One line for people: epoch, losses, accuracy, samples/s and the time split.
  std::string to_line() const;
  // One JSON object on one line (no trailing newline); test fields only when evaluated.
  std::string to_json() const;
};

enum class ProgressStyle {
  kBar,    // one line redrawn in place (\r), at most 10 times a second: for terminals
  kLines,  // a plain line every `line_interval`: for logs and pipes
  kOff,    // no live output (lines given to print() still appear)
};

// kBar if `out` is a terminal, kLines otherwise (kOff for a null `out`).
ProgressStyle default_progress_style(std::FILE* out);

// Reports batches as they finish: batch number, running loss, samples/s and the epoch's ETA.
// `out` is borrowed and must outlive the Progress (null: print nothing at all); it is flushed
// after every write so a reader of a pipe or file sees lines promptly. Not thread-safe: use from
// the training thread.
class Progress {
 public:
  Progress(std::FILE* out, ProgressStyle style,
           std::chrono::duration<double> line_interval = std::chrono::seconds(5));

  // Starts reporting epoch `epoch` (1-based) of `epochs`, which has `batches` batches left.
  void start_epoch(int64_t epoch, int64_t epochs, int64_t batches);
  // After batch `done` (1-based, of the batches given to start_epoch): the mean loss so far in
  // the epoch and the samples processed since start_epoch.
  void update(int64_t done, double loss, int64_t samples);
  // Ends the epoch's live output (clears the bar) and prints `line` plus a newline.
  void print(const std::string& line);

 private:
  // Writes `text` to out_ and flushes; a failed write is dropped (see progress.cc).
  void write(const std::string& text);
  using Clock = std::chrono::steady_clock;

  std::FILE* out_;
  ProgressStyle style_;
  std::chrono::duration<double> interval_;
  int64_t epoch_ = 0, epochs_ = 0, batches_ = 0;
  Clock::time_point start_;
  Clock::time_point last_write_;
  bool bar_shown_ = false;
};

// "[#####...................]": `done` of `total` as a bar of kProgressBarWidth characters.
constexpr int kProgressBarWidth = 24;
std::string progress_bar(int64_t done, int64_t total);

// "12.3k", "1.2M": a rate for people.
std::string human_rate(double per_second);
// "42 s", "3:05", "1:02:03": a duration for people.
std::string human_duration(double seconds);
// "512 B", "3.1 MB", "7.9 TB": a size for people (powers of 1000).
std::string human_bytes(double bytes);

}  // namespace stoker
