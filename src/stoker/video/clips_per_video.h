#pragma once
// ClipsPerVideo: a dataset whose every video gives `count` samples, clip k of the video being
// its sample of part k (SampleInput::part), as torchvision's video reference draws them: its
// RandomClipSampler (training: clips of each video, then shuffled across all videos, so the
// loader's shuffle permutes every video's clips together) and UniformClipSampler (evaluation:
// clips evenly spaced over each video). Manifest::sample_parts holds text(); decode_clip's
// samplers take clip `part` of the `count` clips they would take of the video (num_clips =
// count), the random ones drawing from the sample's own stream (clip_sampler.h). Unlike
// VideoClips (video_clips.h) the count does not depend on the video, so nothing is read at
// open. Samples of a record's parts rather than repeats in the loader's order: each clip has a
// dataset index of its own (its own draws, for any worker count, resumable) and the orders,
// dealing, resume and prefetch, which know only samples, need nothing new; the cost is that
// only a source that lays out parts (a local video folder) gives it. Plain value.

#include <cstdint>
#include <optional>
#include <string>

namespace stoker::video {

struct ClipsPerVideo {
  int64_t count = 1;

  // "clips_per_video(4)". Inline: the sources name their parts with it in a build without the
  // video layer too (store/import/video_record.h).
  std::string text() const { return "clips_per_video(" + std::to_string(count) + ")"; }
  // The enumeration `text` names (text()'s form, count >= 1), or nullopt for any other text.
  static std::optional<ClipsPerVideo> from_text(const std::string& text);
};

}  // namespace stoker::video
