#pragma once
// The clip samplers' parameters (clip_sampler.h) as operations declare them: decode_clip, which
// decodes the clips, and clip_frame_indices, which says which frames they are, take the same,
// so that the same sample draws the same clips in both.

#include <cstdint>
#include <functional>
#include <string>
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
// `sample_parts`: the dataset's (Manifest::sample_parts): sampler "video_clips" takes its clips
// from it (video_clips.h's text: frames_per_clip, step_between_clips, frame_rate; the sampling
// parameters but subsample unused), and a dataset whose samples are clips takes no other
// sampler: kInvalidArgument for either mismatch, saying what to give. `record_frames` (may be
// empty): the dataset's videos' frame counts in record order, from which "uniform_clips"
// numbers each video's clips as torchvision's dataset does (first_clips); read by a call (it
// may index every video: only "uniform_clips" of more than 2 clips a video calls it, its error
// then this one).
using RecordFrames = std::function<Result<std::vector<int64_t>>()>;
Result<ClipSampler> clip_sampler_from(const Params& p, const std::string& sample_parts = {},
                                      const RecordFrames& record_frames = {});

}  // namespace stoker::video
