// Class folders of videos read in place (store/import/video_folder_source.h): torchvision's
// Kinetics, UCF101 and HMDB51 layouts, their classes and order, records {"video": the file's
// bytes, "label"} for a source operation (decode_clip) to decode; with frames_per_clip, a sample
// per clip of every video (torchvision's VideoClips: frames_per_clip, step_between_clips,
// frame_rate), for decode_clip's sampler "video_clips". Local folders only (a URL is refused in
// one line), their listing (and the videos' frame counts and rates) kept in the cache folder;
// only when named (source="videofolder"): `auto` takes a folder of class folders as an image
// folder.

#include <algorithm>

#include "stoker/access/source_registry.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/import/video_folder_source.h"

namespace stoker::sources {
namespace {

// Video extensions as given: separated by spaces, at least one.
Result<std::vector<std::string>> video_extensions(const std::string& location,
                                                  const std::string& text) {
  std::vector<std::string> extensions;
  for (size_t start = 0; start < text.size();) {
    const size_t space = std::min(text.find(' ', start), text.size());
    if (space > start) extensions.push_back(text.substr(start, space - start));
    start = space + 1;
  }
  if (extensions.empty())
    return invalid_argument(location + ": no video extension given (e.g. \"avi mp4\")");
  return extensions;
}

Result<std::shared_ptr<const Dataset>> open_video_folder(const SourceOpening& opening) {
  if (remote::is_remote_url(opening.location))
    return unsupported(remote::shown_location(opening.location) +
                       ": video folders are read from local paths only, not URLs");
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> extensions,
                          video_extensions(opening.location, opening.params.text("extensions")));
  ClassFolderSourceOptions options;
  if (Result<std::string> dir = cache_dir_of(*opening.access); dir.is_ok())
    options.listing_cache_dir = dir.value();
  std::optional<video::VideoClips> clips;
  if (opening.params.integer("frames_per_clip") > 0) {
    clips = video::VideoClips{opening.params.integer("frames_per_clip"),
                              opening.params.integer("step_between_clips"),
                              opening.params.real("frame_rate")};
  }
  STOKER_ASSIGN_OR_RETURN(
      std::shared_ptr<VideoFolderSource> source,
      VideoFolderSource::open(opening.location, std::move(extensions), options, clips));
  return Dataset::open(std::move(source));
}

}  // namespace

SourceSpec video_folder() {
  SourceSpec spec;
  spec.params = {
      ParamSpec::text("extensions", "avi mp4",
                      "the endings that make a file a sample, separated by spaces, matched "
                      "against the name in lower case (torchvision's Kinetics: \"avi mp4\"; "
                      "UCF101 and HMDB51: \"avi\")"),
      ParamSpec::integer("frames_per_clip", 0,
                         "a sample per clip of this many frames of every video (torchvision's "
                         "VideoClips, as Kinetics takes it; decode with DecodeClip(sampler="
                         "\"video_clips\")); 0: a sample per video")
          .in(0, 1 << 20),
      ParamSpec::integer("step_between_clips", 1,
                         "with frames_per_clip: the frames from one clip's start to the next's")
          .in(1, int64_t{1} << 40),
      ParamSpec::real("frame_rate", 0.0,
                      "with frames_per_clip: the frame rate each video is resampled to first "
                      "(0: its own)")
          .in(0, 1e9),
  };
  spec.name = "videofolder";
  spec.doc =
      "a folder of class folders of videos (torchvision's Kinetics / UCF101 / HMDB51: their "
      "classes and order), read in place as {video: the file's bytes, label}";
  spec.auto_rank = 35;  // not recognised: only named
  spec.open = open_video_folder;
  return spec;
}

}  // namespace stoker::sources
