#include "stoker/pipeline/video_frame_counts.h"

#include "stoker/pipeline/frame_counts_memo.h"
#include "stoker/store/record_view.h"
#include "stoker/video/video_cache.h"

namespace stoker {

Result<std::vector<int64_t>> video_frame_counts(const Dataset& dataset, int field,
                                                const std::string& cache_dir) {
  std::vector<int64_t> frames;
  STOKER_RETURN_IF_ERROR(dataset.for_each_record([&](uint64_t i) {
    if (dataset.part(i) != 0) return Status::ok();
    int64_t count = 0;
    if (Result<ByteSpan> bytes = variable_field(dataset.schema(), dataset.record(i), field);
        bytes.is_ok())
      if (Result<std::shared_ptr<const video::VideoIndex>> index =
              video::indexed_video(bytes.value(), cache_dir);
          index.is_ok())
        count = index.value()->frame_count();
    frames.push_back(count);
    return Status::ok();
  }));
  return frames;
}

std::function<Result<std::vector<int64_t>>()> context_frame_counts(const SourceContext& context,
                                                                   int field) {
  if (context.dataset == nullptr) return {};
  return [dataset = context.dataset, field, cache_dir = context.cache_dir,
          memo = context.frame_counts]() -> Result<std::vector<int64_t>> {
    const auto read = [&] { return video_frame_counts(*dataset, field, cache_dir); };
    return memo ? memo->counts(*dataset, field, cache_dir, read) : read();
  };
}

}  // namespace stoker
