#include "stoker/store/import/video_folder_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <thread>

#include "stoker/store/import/image_folder_listing_cache.h"
#include "stoker/store/import/video_record.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"
#include "stoker/util/saved_form.h"
#include "stoker/video/video_index.h"

namespace stoker {
namespace {

// What enumerating a video's clips needs of it (its index's), and the file it was read from.
struct VideoRate {
  uint64_t size = 0;
  int64_t stamp = -1;
  int64_t frames = 0;
  double fps = 0;
  std::string error;  // why it could not be indexed ("" : it was)
};

constexpr char kRatesMagic[8] = {'S', 'T', 'K', 'V', 'R', 'T', 'S', '1'};
constexpr uint64_t kMaxRatesBytes = uint64_t{1} << 30;

// The file's size and modification time (ns), or false where it cannot be stat'ed.
bool stat_file(const std::string& path, uint64_t& size, int64_t& stamp) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  size = static_cast<uint64_t>(st.st_size);
  stamp = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

std::string encode_rates(const std::string& root, const std::map<std::string, VideoRate>& rates) {
  std::string body;
  put_text(body, root);
  put_u64(body, rates.size());
  for (const auto& [path, rate] : rates) {
    uint64_t fps_bits = 0;
    std::memcpy(&fps_bits, &rate.fps, sizeof fps_bits);
    put_text(body, path);
    put_u64(body, rate.size);
    put_u64(body, static_cast<uint64_t>(rate.stamp));
    put_u64(body, static_cast<uint64_t>(rate.frames));
    put_u64(body, fps_bits);
  }
  return seal(kRatesMagic, body);
}

// The saved rates of `root` (none for a file that is missing or damaged: they are read again).
std::map<std::string, VideoRate> decode_rates(const std::string& bytes, const std::string& root) {
  const std::optional<ByteSpan> body =
      unseal({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, kRatesMagic);
  if (!body) return {};
  SavedReader in(*body);
  std::string saved_root;
  uint64_t n = 0;
  if (!in.text(saved_root) || saved_root != root || !in.count(n, 40)) return {};
  std::map<std::string, VideoRate> rates;
  for (uint64_t k = 0; k < n; ++k) {
    std::string path;
    VideoRate rate;
    uint64_t stamp = 0, frames = 0, fps_bits = 0;
    if (!in.text(path) || !in.u64(rate.size) || !in.u64(stamp) || !in.u64(frames) ||
        !in.u64(fps_bits))
      return {};
    rate.stamp = static_cast<int64_t>(stamp);
    rate.frames = static_cast<int64_t>(frames);
    std::memcpy(&rate.fps, &fps_bits, sizeof rate.fps);
    rates[path] = rate;
  }
  return in.done() ? rates : std::map<std::string, VideoRate>{};
}

// Every listed video's frames and average rate (video_index.h's): from `cache_dir`'s saved
// copy where a file's size and modification time are those it was read at, else read from the
// file on a few threads (then saved there). `cache_dir` "": every file read.
std::vector<VideoRate> video_rates(const std::string& root,
                                   const std::vector<std::string>& extensions,
                                   const ImageFolderListing& listing,
                                   const std::string& cache_dir) {
  const std::string joined = fmt::format("{}", fmt::join(extensions, "\n"));
  const std::string file =
      cache_dir.empty()
          ? std::string()
          : cache_file_of(root, cache_dir, kVideoFolderListingFolder,
                          fmt::format("{:016x}.rates", xxh3_64(joined.data(), joined.size())));
  std::map<std::string, VideoRate> saved;
  if (!file.empty())
    if (Result<std::string> bytes = read_file(file, kMaxRatesBytes); bytes.is_ok())
      saved = decode_rates(bytes.value(), root);
  const std::vector<ImageFolderSample>& samples = listing.samples;
  std::vector<VideoRate> rates(samples.size());
  std::vector<size_t> unread;
  for (size_t i = 0; i < samples.size(); ++i) {
    VideoRate& rate = rates[i];
    if (!stat_file(samples[i].path, rate.size, rate.stamp)) rate.stamp = -1;
    const auto found = saved.find(samples[i].path);
    if (rate.stamp >= 0 && found != saved.end() && found->second.size == rate.size &&
        found->second.stamp == rate.stamp) {
      rate = found->second;
    } else {
      unread.push_back(i);
    }
  }
  std::atomic<size_t> next{0};
  const auto index_files = [&] {
    for (size_t k = next++; k < unread.size(); k = next++) {
      VideoRate& rate = rates[unread[k]];
      Result<video::VideoIndex> index = video::read_video_index(samples[unread[k]].path);
      if (!index.is_ok()) {  // named by the source's record_error: without the path here
        rate.error = index.status().message();
        const std::string named = video::video_named(samples[unread[k]].path) + ": ";
        if (rate.error.rfind(named, 0) == 0) rate.error.erase(0, named.size());
        continue;
      }
      rate.frames = index.value().frame_count();
      rate.fps = index.value().average_fps();
    }
  };
  const size_t threads = std::min<size_t>(
      unread.size(), std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(index_files);
  index_files();
  for (std::thread& thread : pool) thread.join();
  if (!file.empty() && !unread.empty()) {
    std::map<std::string, VideoRate> keep;
    for (size_t i = 0; i < samples.size(); ++i)
      if (rates[i].error.empty() && rates[i].stamp >= 0) keep[samples[i].path] = rates[i];
    save_cache_file(file, encode_rates(root, keep));
  }
  return rates;
}

}  // namespace

ClassFolderFiles video_files(std::vector<std::string> extensions) {
  return {std::move(extensions), "a video extension", "a VideoFolder", kVideoFolderListingFolder};
}

Result<std::shared_ptr<VideoFolderSource>> VideoFolderSource::open(
    const std::string& root, std::vector<std::string> extensions,
    const ClassFolderSourceOptions& options, const std::optional<video::VideoClips>& clips,
    int64_t clips_per_video) {
  if (clips_per_video < 1 || (clips && clips_per_video > 1))
    return invalid_argument(fmt::format(
        "{}: clips_per_video {} must be at least 1, and 1 with frames_per_clip (whose clips are "
        "every clip of each video)",
        root, clips_per_video));
  if (clips) {
    const Status checked = clips->check();
    if (!checked.is_ok()) return invalid_argument(root + ": " + checked.message());
  }
  const std::vector<std::string> given = extensions;
  STOKER_ASSIGN_OR_RETURN(ImageFolderListing listing,
                          cached_class_folder_listing(root, video_files(std::move(extensions)),
                                                      options.listing_cache_dir));
  std::shared_ptr<VideoFolderSource> source(new VideoFolderSource());
  ClassFolderParts parts;
  if (clips) {
    const std::vector<VideoRate> rates =
        video_rates(root, given, listing, options.listing_cache_dir);
    for (size_t i = 0; i < rates.size(); ++i) {
      Result<int64_t> count = rates[i].error.empty()
                                  ? clips->count(rates[i].frames, rates[i].fps)
                                  : Result<int64_t>(invalid_argument(rates[i].error));
      if (!count.is_ok()) parts.bad[i] = count.status().message();
      parts.counts.push_back(count.is_ok() ? count.value() : 0);
    }
    parts.text = clips->text();
    source->clip_counts_ = parts.counts;
  } else if (clips_per_video > 1) {
    parts.counts.assign(listing.samples.size(), clips_per_video);
    parts.text = video::ClipsPerVideo{clips_per_video}.text();
  }
  STOKER_RETURN_IF_ERROR(source->lay_out(root, std::move(listing), video_record_schema(), options,
                                         nullptr, std::move(parts)));
  return source;
}

Result<std::shared_ptr<VideoFolderSource>> VideoFolderSource::open_listed(
    std::string location, ImageFolderListing listing, std::shared_ptr<const InPlaceFiles> files,
    const ClassFolderSourceOptions& options, int64_t clips_per_video) {
  if (clips_per_video < 1 || (clips_per_video > 1 && !options.record_bytes))
    return invalid_argument(
        fmt::format("{}: clips_per_video {} must be at least 1, and 1 for files read whole",
                    location, clips_per_video));
  ClassFolderParts parts;
  if (clips_per_video > 1) {
    parts.counts.assign(listing.samples.size(), clips_per_video);
    parts.text = video::ClipsPerVideo{clips_per_video}.text();
  }
  std::shared_ptr<VideoFolderSource> source(new VideoFolderSource());
  STOKER_RETURN_IF_ERROR(source->lay_out(std::move(location), std::move(listing),
                                         video_record_schema(), options, std::move(files),
                                         std::move(parts)));
  return source;
}

std::string VideoFolderSource::describe() const {
  if (!manifest().sample_parts.empty())
    return fmt::format("{} (a video folder: {} videos, {} classes, {} clips of {}, read in place)",
                       location(), listing().samples.size(), listing().classes.size(),
                       manifest().records, manifest().sample_parts);
  return fmt::format("{} (a video folder: {} videos, {} classes, read in place)", location(),
                     listing().samples.size(), listing().classes.size());
}

std::vector<uint8_t> VideoFolderSource::make_record(int64_t label, const std::string* file,
                                                    std::string& /*bad*/) const {
  const ByteSpan video =
      file ? ByteSpan{reinterpret_cast<const uint8_t*>(file->data()), file->size()} : ByteSpan{};
  return encode_video_record(manifest().schema, video, label);
}

}  // namespace stoker
