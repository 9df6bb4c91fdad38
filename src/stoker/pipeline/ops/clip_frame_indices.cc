// clip_frame_indices: which frames of video field `video` the clips of a decode_clip with the
// same sampling parameters hold, as int64 [T] ([K, T] for several clips; regular timestamps:
// [K, T] with K up to num_clips, a variable sample). Both operations are their fields' first,
// so they draw the clip starts first from the sample's one stream: the same starts. The frames
// are torchcodec's indices (presentation order); the video is demuxed for its index (kept for
// the thread's next clip of it and in the cache folder: video/video_cache.h), not decoded. A video
// that does not open or a clip that cannot be drawn: decode_clip's one-line errors.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/video_frame_counts.h"
#include "stoker/store/record_view.h"
#include "stoker/video/clip_sampler_params.h"
#include "stoker/video/video_cache.h"

namespace stoker::ops {
namespace {

class ClipFrameIndices : public VariableTransform {
 public:
  ClipFrameIndices(int video, video::ClipSampler sampler, bool variable, std::string cache_dir)
      : video_(video), sampler_(sampler), variable_(variable), cache_dir_(std::move(cache_dir)) {}

  DType dtype() const override { return DType::kInt64; }
  std::vector<int64_t> sample_shape() const override {
    if (sampler_.num_clips == 1 && !variable_) return {sampler_.clip_length()};
    return {sampler_.num_clips, sampler_.clip_length()};
  }

  Status apply_sized(const SampleInput& input, uint8_t* slot, int64_t* shape) const override {
    STOKER_ASSIGN_OR_RETURN(ByteSpan bytes, variable_field(*input.schema, input.record, video_));
    STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const video::VideoIndex> index,
                            video::indexed_video(bytes, cache_dir_));
    CounterRng rng = input.rng();
    STOKER_ASSIGN_OR_RETURN(std::vector<int64_t> frames,
                            video::clip_frame_indices(sampler_, *index, rng, "", input.part,
                                                      sampler_.first_clip_of(input.index)));
    const int64_t clips = static_cast<int64_t>(frames.size()) / sampler_.clip_length();
    std::memcpy(slot, frames.data(), frames.size() * sizeof(int64_t));
    const std::vector<int64_t> capacity = sample_shape();
    std::copy(capacity.begin(), capacity.end(), shape);
    if (capacity.size() == 2) shape[0] = clips;
    return Status::ok();
  }

 private:
  const int video_;
  const video::ClipSampler sampler_;
  const bool variable_;  // regular timestamps: as many clips as fit
  const std::string cache_dir_;
};

// The fixed form (every sampler but regular timestamps): a sample of sample_shape().
class FixedClipFrameIndices : public Transform {
 public:
  explicit FixedClipFrameIndices(std::shared_ptr<const ClipFrameIndices> indices)
      : indices_(std::move(indices)) {}
  DType dtype() const override { return DType::kInt64; }
  std::vector<int64_t> sample_shape() const override { return indices_->sample_shape(); }
  Status apply(const SampleInput& input, uint8_t* slot) const override {
    std::vector<int64_t> shape(sample_shape().size());
    return indices_->apply_sized(input, slot, shape.data());
  }

 private:
  const std::shared_ptr<const ClipFrameIndices> indices_;
};

}  // namespace

OpSpec clip_frame_indices() {
  OpSpec op;
  op.name = "clip_frame_indices";
  op.role = OpRole::kSource;
  op.python_class = "ClipFrameIndices";
  op.output = SampleType{Layout::kArray, DType::kInt64, false};
  op.backend = OpBackend::kTensor;
  op.doc =
      "The frame indices of the clips a DecodeClip with the same sampling parameters decodes "
      "from video field `video`: int64 [T] ([K, T] for several clips)";
  op.params = video::clip_sampler_params();
  op.params.insert(op.params.begin(),
                   ParamSpec::text("video", "video", "the stored field of the video files"));
  op.make_source = [](const Params& p,
                      const SourceContext& context) -> Result<std::shared_ptr<const Transform>> {
    const std::string& video = p.text("video");
    const int f = context.schema->find(video);
    if (f < 0 || context.schema->fields()[f].is_fixed())
      return invalid_argument(fmt::format(
          "field '{}': clip_frame_indices reads '{}', which is no stored bytes field of video "
          "files",
          context.field, video));
    Result<video::ClipSampler> sampler =
        video::clip_sampler_from(p, context.sample_parts, context_frame_counts(context, f));
    if (!sampler.is_ok())
      return invalid_argument(fmt::format("field '{}': clip_frame_indices: {}", context.field,
                                          sampler.status().message()));
    const bool variable = sampler.value().starts == video::ClipStarts::kRegularTimestamps;
    auto indices =
        std::make_shared<ClipFrameIndices>(f, sampler.value(), variable, context.cache_dir);
    if (variable) return std::shared_ptr<const Transform>(indices);
    return std::shared_ptr<const Transform>(std::make_shared<FixedClipFrameIndices>(indices));
  };
  return op;
}

}  // namespace stoker::ops
