#pragma once
// VideoAccuracy: evaluation's video accuracy when each video is evaluated on several clips
// (TrainerOptions::eval_clips_per_video), as torchvision's video reference computes it: each
// clip's softmax added to its video's, the video right where the sum is highest at its label.
// A rank adds the clips it evaluated; accuracy() sums every rank's before deciding, so a video
// whose clips were dealt to several ranks counts once. Not thread-safe.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "stoker/distributed/process_group.h"

namespace stoker {

class VideoAccuracy {
 public:
  VideoAccuracy(int64_t videos, int64_t classes);

  // Adds clips' logits [n, classes], of videos `videos` (int64 [n], each < videos) labelled
  // `labels` (int64 [n]).
  void add(const at::Tensor& logits, const at::Tensor& videos, const at::Tensor& labels);
  // The share of videos with a clip (on any rank of `group`, null: this process alone) whose
  // summed softmax is highest at their label (the first class of a tie, as argmax); 0 for none.
  double accuracy(ProcessGroup* group) const;

 private:
  int64_t classes_;
  // By video: its clips' softmax summed (classes values), then their labels summed and their
  // count (a sum over ranks keeps label = labels / count exact).
  std::vector<double> sums_;
};

}  // namespace stoker
