#pragma once
// The clip samplers' parameters (clip_sampler.h) as operations declare them: decode_clip, which
// decodes the clips, and clip_frame_indices, which says which frames they are, take the same,
// so that the same sample draws the same clips in both.

#include <vector>

#include "stoker/util/param_spec.h"
#include "stoker/util/status.h"
#include "stoker/video/clip_sampler.h"

namespace stoker::video {

// sampler, num_clips, num_frames_per_clip, num_indices_between_frames, sampling_range_start,
// sampling_range_end, seconds_between_frames, seconds_between_clip_starts,
// sampling_range_start_seconds, sampling_range_end_seconds (torchcodec's names), subsample
// (torchvision's UniformTemporalSubsample), policy.
std::vector<ParamSpec> clip_sampler_params();

// The sampler those parameters describe; kInvalidArgument (ClipSampler::check's) otherwise.
Result<ClipSampler> clip_sampler_from(const Params& p);

}  // namespace stoker::video
