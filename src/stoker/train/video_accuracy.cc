#include "stoker/train/video_accuracy.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "stoker/train/rank_agreement.h"

namespace stoker {

VideoAccuracy::VideoAccuracy(int64_t videos, int64_t classes)
    : classes_(classes), sums_(static_cast<size_t>(videos * (classes + 2)), 0.0) {}

void VideoAccuracy::add(const at::Tensor& logits, const at::Tensor& videos,
                        const at::Tensor& labels) {
  const at::Tensor p = at::softmax(logits.to(at::kDouble), 1).cpu().contiguous();
  const at::Tensor v = videos.to(at::kLong).cpu().contiguous();
  const at::Tensor l = labels.to(at::kLong).cpu().contiguous();
  const double* probs = p.data_ptr<double>();
  for (int64_t i = 0; i < v.size(0); ++i) {
    double* video = sums_.data() + v.data_ptr<int64_t>()[i] * (classes_ + 2);
    for (int64_t c = 0; c < classes_; ++c) video[c] += probs[i * classes_ + c];
    video[classes_] += static_cast<double>(l.data_ptr<int64_t>()[i]);
    video[classes_ + 1] += 1;
  }
}

double VideoAccuracy::accuracy(ProcessGroup* group) const {
  const std::vector<double> all = sum_over_ranks(group, sums_);
  int64_t seen = 0, right = 0;
  for (size_t at = 0; at < all.size(); at += static_cast<size_t>(classes_ + 2)) {
    const double* video = all.data() + at;
    const double clips = video[classes_ + 1];
    if (clips == 0) continue;
    ++seen;
    const auto best = std::max_element(video, video + classes_) - video;
    right += std::llround(video[classes_] / clips) == best;
  }
  return seen == 0 ? 0.0 : static_cast<double>(right) / static_cast<double>(seen);
}

}  // namespace stoker
