#pragma once
// The frame counts of a dataset's videos, in record order, from which decode_clip's sampler
// "uniform_clips" numbers each video's clips in the dataset as torchvision's VideoClips numbers
// them over every video of its dataset (video/clip_sampler.h's first_clips): each stored
// record's (part 0's: a record whose samples are parts counts once) video field's index
// (video/video_cache.h: kept in `cache_dir`, so a later run reads each video's bytes but indexes
// none). A video that cannot be indexed counts 0 frames (torchvision's VideoClips gives it no
// clip). Built with the video layer; reads the whole dataset once (a remote one's shards
// fetched through its cache, as Dataset::for_each_record does).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/store/dataset.h"
#include "stoker/util/status.h"

namespace stoker {

// The frames of each record's video in bytes field `field` of `dataset`; a pin's failure is the
// error.
Result<std::vector<int64_t>> video_frame_counts(const Dataset& dataset, int field,
                                                const std::string& cache_dir);

// video_frame_counts of `context`'s dataset and cache folder, by a call (a clip sampler's
// RecordFrames: video/clip_sampler_params.h), through the context's FrameCountsMemo where it
// has one; empty where the context names no dataset.
std::function<Result<std::vector<int64_t>>()> context_frame_counts(const SourceContext& context,
                                                                   int field);

}  // namespace stoker
