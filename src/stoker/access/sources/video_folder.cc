// Class folders of videos read in place (store/import/video_folder_source.h): torchvision's
// Kinetics, UCF101 and HMDB51 layouts, their classes and order, records {"video": the file's
// bytes, "label"} for a source operation (decode_clip) to decode; with frames_per_clip, a sample
// per clip of every video (torchvision's VideoClips: frames_per_clip, step_between_clips,
// frame_rate), for decode_clip's sampler "video_clips". Local folders only (a URL is refused in
// one line), their listing (and the videos' frame counts and rates) kept in the cache folder.
// `auto` takes a folder of class folders as a video folder when the first file in name order with
// an image's or a video's extension (avi, mp4) is a video, and asks before the image folder.

#include <algorithm>
#include <filesystem>
#include <optional>

#include "stoker/access/source_opening.h"
#include "stoker/access/source_registry.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/import/image_folder_scan.h"
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

// The default extensions, as `extensions` gives them.
constexpr const char* kDefaultExtensions = "avi mp4";

// The entries a walk of a folder looks at, and the depth it goes to, before it gives up
// recognising it as videos.
constexpr int kEntriesLookedAt = 10000;
constexpr int kDepthLookedAt = 16;

// Whether the first file under `folder` in name order (its entries sorted, folders walked depth
// first, symbolic links followed) with an image's or one of `videos`' extension is a video;
// nullopt where none is among the `budget` entries left, within `depth` levels.
std::optional<bool> first_is_video(const std::filesystem::path& folder,
                                   const std::vector<std::string>& videos, int& budget, int depth) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::directory_entry> entries;
  for (fs::directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::directory_iterator() && budget > 0; it.increment(ec), --budget)
    entries.push_back(*it);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  for (const fs::directory_entry& entry : entries) {
    if (entry.is_directory(ec)) {
      if (depth <= 1) continue;
      if (const std::optional<bool> found = first_is_video(entry.path(), videos, budget, depth - 1))
        return found;
      continue;
    }
    const std::string name = entry.path().filename().string();
    if (has_image_extension(name)) return false;
    if (has_extension(name, videos)) return true;
  }
  return std::nullopt;
}

// A local image folder (remote::is_image_folder) whose files are videos: in its class folders,
// the first file in name order (first_is_video) with an image's or a default video extension
// has a video's. Name order, not the file system's, so that a folder holding both is taken the
// same way everywhere.
bool is_video_folder(const std::string& location, const std::function<bool()>&) {
  namespace fs = std::filesystem;
  if (remote::is_remote_url(location) || !remote::is_image_folder(location)) return false;
  const std::vector<std::string> videos = video_extensions(location, kDefaultExtensions).value();
  std::error_code ec;
  std::vector<fs::path> classes;
  int budget = kEntriesLookedAt;
  for (fs::directory_iterator it(location, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::directory_iterator() && budget > 0; it.increment(ec), --budget)
    if (it->is_directory(ec)) classes.push_back(it->path());
  std::sort(classes.begin(), classes.end());
  for (const fs::path& folder : classes)
    if (const std::optional<bool> found = first_is_video(folder, videos, budget, kDepthLookedAt))
      return *found;
  return false;
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
      ParamSpec::text("extensions", kDefaultExtensions,
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
      "classes and order), read in place as {video: the file's bytes, label}; `auto` takes a "
      "folder of class folders of videos (avi, mp4)";
  spec.auto_rank = 25;  // before the image folder, which takes any folder of class folders
  spec.recognises = is_video_folder;
  spec.open = open_video_folder;
  return spec;
}

}  // namespace stoker::sources
