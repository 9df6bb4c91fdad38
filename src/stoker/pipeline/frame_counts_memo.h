#pragma once
// The frame counts of a dataset's videos (pipeline/video_frame_counts.h) read once for all the
// field requests of one loader (issue 63): decode_clip's and clip_frame_indices' sampler
// "uniform_clips" each number their clips over the whole dataset, and each reading every video
// made a trainer's start read its data twice. Whoever makes a loader's field requests owns one
// (training_setup's make_loader, bench loader, the Python Loader's field_requests), passes it to
// each make_field_request (SourceContext::frame_counts) and keeps it while they are made: a
// factory reads it while it makes its transform, never after. Thread-safe: requests made at
// once read each key once, the later callers waiting for the first's read.

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

class Dataset;

class FrameCountsMemo {
 public:
  using Read = std::function<Result<std::vector<int64_t>>()>;

  // The counts of field `field`'s videos of `dataset` indexed in `cache_dir`: `read`'s result
  // (its error too) on the first call for that (dataset, field, cache_dir), the same after.
  Result<std::vector<int64_t>> counts(const Dataset& dataset, int field,
                                      const std::string& cache_dir, const Read& read);

  // How many times counts() called its `read` (tests count them).
  int64_t reads() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::tuple<const Dataset*, int, std::string>, Result<std::vector<int64_t>>> counts_;
  int64_t reads_ = 0;
};

}  // namespace stoker
