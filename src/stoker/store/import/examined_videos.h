#pragma once
// A dataset's videos as inspect and verify read them (the command and the Python package alike):
// the records of its bytes field "video" (a video folder's, or a dataset converted with one)
// examined one by one (video/video_check.h), each named by its file (relative to the folder)
// where the dataset is a class folder read in place, else by its record. In a build without the
// video layer (no FFmpeg) each examination is the one-line error saying so. Stateless
// functions.

#include <cstdint>
#include <functional>
#include <string>

#include "stoker/store/dataset.h"
#include "stoker/video/video_check.h"

namespace stoker {

struct ExaminedVideo {
  uint64_t record = 0;
  std::string name;    // "class/file.mp4", or "record N"
  int64_t label = -1;  // -1 without a scalar int64 field "label"
  Status status;       // why the video could not be read or decoded (not named: record_error)
  video::VideoFacts facts;
};

// Calls `visit` with each of the first `count` records' video (all of them for a larger count),
// in order, examined as `decode` says, frames above `max_pixels` (0: no bound) an error
// (examine_video); a record found bad when read in place (Dataset::found_bad) is left to the
// record check: its status is that error, named. A pin's failure is returned.
Status for_each_video(const Dataset& dataset, uint64_t count, video::VideoDecode decode,
                      int64_t max_pixels, const std::function<void(const ExaminedVideo&)>& visit);

// verify's check of the videos of `dataset`: each examined as `decode` says, frames above
// DecodeClip's default size bound refused as the loader refuses them; `bad` gets each bad one's
// one-line error naming its record (those the record check finds bad are left to it). The
// number of bad ones, or a pin's failure.
Result<uint64_t> check_videos(const Dataset& dataset, video::VideoDecode decode,
                              const std::function<void(const Status&)>& bad);

}  // namespace stoker
