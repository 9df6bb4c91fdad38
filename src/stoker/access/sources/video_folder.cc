// Class folders of videos read in place (store/import/video_folder_source.h): torchvision's
// Kinetics, UCF101 and HMDB51 layouts, their classes and order, records {"video": the file's
// bytes, "label"} for a source operation (decode_clip) to decode; with frames_per_clip, a sample
// per clip of every video (torchvision's VideoClips: frames_per_clip, step_between_clips,
// frame_rate), for decode_clip's sampler "video_clips". Local, their listing (and the videos'
// frame counts and rates) kept in the cache folder; or at an http(s):// or s3:// URL, listed as a
// remote image folder is (access/remote_image_folder.h), each record holding a reference to its
// video, which decode_clip reads by ranges (access/remote_video_opener.h; no frames_per_clip: it
// would index every video at open). `auto` takes a folder of class
// folders as a video folder when the first file in name order with an image's or a video's
// extension (avi, mp4) is a video, and asks before the image folder.

#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <utility>

#include "stoker/access/remote_objects.h"
#include "stoker/access/remote_video_opener.h"
#include "stoker/access/source_opening.h"
#include "stoker/access/source_registry.h"
#include "stoker/net/object_store.h"
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

// The entries a walk of a local folder looks at, the listings a walk of a remote one makes,
// and the depth either goes to, before it gives up recognising it as videos.
constexpr int kEntriesLookedAt = 10000;
constexpr int kRemoteListingsMade = 8;
constexpr int kDepthLookedAt = 16;

// A folder's files and sub-folders by name.
struct FolderNames {
  std::vector<std::string> files, folders;
};
// Lists a folder (its path or URL); nullopt where it cannot be, or the walk's budget is spent.
using ListFolder = std::function<std::optional<FolderNames>(const std::string& folder)>;

// Whether the first file under `folder` in name order (its files and folders sorted together,
// folders walked depth first) with an image's or one of `videos`' extension is a video; nullopt
// where `list` finds none within `depth` levels.
std::optional<bool> first_is_video(const ListFolder& list, const std::string& folder,
                                   const std::vector<std::string>& videos, int depth) {
  std::optional<FolderNames> names = list(folder);
  if (!names) return std::nullopt;
  std::vector<std::pair<std::string, bool>> entries;  // name, whether a folder
  for (std::string& file : names->files) entries.emplace_back(std::move(file), false);
  for (std::string& sub : names->folders) entries.emplace_back(std::move(sub), true);
  std::sort(entries.begin(), entries.end());
  for (const auto& [name, is_folder] : entries) {
    if (is_folder) {
      if (depth <= 1) continue;
      if (const std::optional<bool> found =
              first_is_video(list, folder + "/" + name, videos, depth - 1))
        return found;
      continue;
    }
    if (has_image_extension(name)) return false;
    if (has_extension(name, videos)) return true;
  }
  return std::nullopt;
}

// Whether the first of `classes` (class folders, in any order) whose walk finds a file with an
// image's or a default video extension finds a video's (first_is_video, in name order: not the
// file system's or the server's, so that a folder holding both is taken the same way
// everywhere).
bool first_class_is_video(const ListFolder& list, const std::string& root,
                          std::vector<std::string> classes) {
  const std::vector<std::string> videos = video_extensions(root, kDefaultExtensions).value();
  std::sort(classes.begin(), classes.end());
  for (const std::string& name : classes)
    if (const std::optional<bool> found =
            first_is_video(list, root + "/" + name, videos, kDepthLookedAt))
      return *found;
  return false;
}

// A local image folder (remote::is_image_folder) whose first file is a video's
// (first_class_is_video), its walk following symbolic links.
bool is_local_video_folder(const std::string& location) {
  namespace fs = std::filesystem;
  if (!remote::is_image_folder(location)) return false;
  int budget = kEntriesLookedAt;
  const ListFolder list = [&budget](const std::string& folder) -> std::optional<FolderNames> {
    std::error_code ec;
    FolderNames names;
    for (fs::directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::directory_iterator() && budget > 0; it.increment(ec), --budget)
      (it->is_directory(ec) ? names.folders : names.files)
          .push_back(it->path().filename().string());
    return names;
  };
  const std::optional<FolderNames> top = list(location);
  return first_class_is_video(list, location, top->folders);
}

// A folder URL (ending in '/') whose listing has sub-folders and no dataset's manifest, and
// whose first file is a video's (first_class_is_video), within kRemoteListingsMade listings.
bool is_remote_video_folder(const std::string& location, const std::function<bool()>& cancelled) {
  if (location.back() != '/') return false;
  Result<remote::RemoteUrl> url = remote::parse_remote_url(location);
  if (!url.is_ok()) return false;
  Result<std::shared_ptr<const remote::ObjectStore>> store = remote::store_of(url.value());
  if (!store.is_ok()) return false;
  const std::string root = location.substr(0, location.size() - 1);
  int budget = kRemoteListingsMade;
  const ListFolder list = [&](const std::string& folder) -> std::optional<FolderNames> {
    if (budget-- <= 0) return std::nullopt;
    const std::string relative = folder.size() > root.size() ? folder.substr(root.size() + 1) : "";
    Result<remote::FolderEntries> entries =
        store.value()->list_entries(relative.empty() ? "" : relative + "/", cancelled);
    if (!entries.is_ok()) return std::nullopt;
    FolderNames names;
    for (const remote::ListedObject& file : entries.value().files) names.files.push_back(file.name);
    names.folders = std::move(entries.value().folders);
    return names;
  };
  const std::optional<FolderNames> top = list(root);
  if (!top || top->folders.empty()) return false;
  for (const std::string& file : top->files)
    if (file == kManifestName) return false;
  return first_class_is_video(list, root, top->folders);
}

// A local or remote image folder whose files are videos.
bool is_video_folder(const std::string& location, const std::function<bool()>& cancelled) {
  return remote::is_remote_url(location) ? is_remote_video_folder(location, cancelled)
                                         : is_local_video_folder(location);
}

// The video folder at the URL `opening.location`: a sample per video (or clips_per_video of
// each), its record a reference to the file, read by ranges (access/remote_video_opener.h).
Result<std::shared_ptr<const Dataset>> open_remote_video_folder(
    const SourceOpening& opening, std::vector<std::string> extensions) {
  const int64_t clips_per_video = opening.params.integer("clips_per_video");
  if (opening.params.integer("frames_per_clip") > 0)
    return unsupported(remote::shown_location(opening.location) +
                       ": frames_per_clip indexes every video at open: local video folders "
                       "only (at a URL, sample clips with DecodeClip's samplers)");
  return remote::open_remote_class_folder(
      opening, video_files(std::move(extensions)),
      [clips_per_video](
          std::string location, ImageFolderListing listing,
          std::shared_ptr<const InPlaceFiles> files,
          const ClassFolderSourceOptions& options) -> Result<std::shared_ptr<ClassFolderSource>> {
        STOKER_ASSIGN_OR_RETURN(
            std::shared_ptr<VideoFolderSource> source,
            VideoFolderSource::open_listed(std::move(location), std::move(listing),
                                           std::move(files), options, clips_per_video));
        return std::shared_ptr<ClassFolderSource>(std::move(source));
      },
      remote::remote_video_references);
}

Result<std::shared_ptr<const Dataset>> open_video_folder(const SourceOpening& opening) {
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> extensions,
                          video_extensions(opening.location, opening.params.text("extensions")));
  if (remote::is_remote_url(opening.location))
    return open_remote_video_folder(opening, std::move(extensions));
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
      VideoFolderSource::open(opening.location, std::move(extensions), options, clips,
                              opening.params.integer("clips_per_video")));
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
      ParamSpec::integer("clips_per_video", 1,
                         "samples of each video (torchvision's video reference's clips per "
                         "video): clip k of a video is its own sample, shuffled among every "
                         "video's clips; decode_clip's samplers take one clip each (not with "
                         "frames_per_clip)")
          .in(1, 1024),
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
