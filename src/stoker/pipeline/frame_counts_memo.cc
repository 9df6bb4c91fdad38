#include "stoker/pipeline/frame_counts_memo.h"

namespace stoker {

Result<std::vector<int64_t>> FrameCountsMemo::counts(const Dataset& dataset, int field,
                                                     const std::string& cache_dir,
                                                     const Read& read) {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_tuple(&dataset, field, cache_dir);
  auto found = counts_.find(key);
  if (found == counts_.end()) {
    ++reads_;
    found = counts_.emplace(std::move(key), read()).first;
  }
  return found->second;
}

int64_t FrameCountsMemo::reads() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return reads_;
}

}  // namespace stoker
