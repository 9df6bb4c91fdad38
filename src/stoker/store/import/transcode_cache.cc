#include "stoker/store/import/transcode_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "stoker/store/image_record.h"
#include "stoker/store/import/stored_image.h"
#include "stoker/store/record_encoder.h"
#include "stoker/store/shard_writer.h"
#include "stoker/util/checksum.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSuffix = ".shard";

// How long before a cache was opened a file's use still keeps it: mtimes come from the kernel's
// coarse clock, which may lag the clock the cache reads by some milliseconds.
constexpr int64_t kClockSlackNs = 1'000'000'000;
// After a listing that could not make room, the least time before the next one.
constexpr int64_t kRelistingNs = 1'000'000'000;

// A cached file as listed: its size and when it was last used (its mtime).
struct CachedFile {
  std::string path;
  uint64_t bytes = 0;
  int64_t used_ns = 0;  // since the epoch
};

// The cached files under `dir` (those that vanish meanwhile left out); kIoError naming `dir`
// when it cannot be listed.
Result<std::vector<CachedFile>> list_cached(const std::string& dir) {
  std::vector<CachedFile> files;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != kSuffix) continue;
    CachedFile file{entry.path().string()};
    struct stat st {};
    if (::stat(file.path.c_str(), &st) != 0) continue;
    file.bytes = static_cast<uint64_t>(st.st_size);
    file.used_ns = st.st_mtim.tv_sec * int64_t{1'000'000'000} + st.st_mtim.tv_nsec;
    files.push_back(std::move(file));
  }
  if (ec)
    return io_error(fmt::format("{}: cannot list the transcode cache: {}", dir, ec.message()));
  return files;
}

// Records a use of the cached file `path`: its mtime set to now (a file this process may not
// touch keeps its older time).
void touch(const std::string& path) { ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

// The file of `original`'s unit under `dir`: named by its name and its records' checksums.
std::string cached_path(const std::string& dir, const ShardReader& original) {
  std::string key = original.path();
  key.push_back('\0');
  const uint64_t records = original.index_checksum();
  key.append(reinterpret_cast<const char*>(&records), sizeof records);
  return fmt::format("{}/{:016x}{}", dir, xxh3_64(key.data(), key.size()), kSuffix);
}

// Whether a unit of `schema` is transcoded: image records (the image a bytes field) with no
// variable-length field (copied as they are otherwise).
bool transcodable(const Schema& schema) {
  if (!ImageRecordFields::find(schema).is_ok()) return false;
  for (const Field& field : schema.fields())
    if (field.is_variable_length()) return false;
  return true;
}

// `cached` checked whole against `original`: its records, each one's checksum.
Status check_cached(const ShardReader& cached, const ShardReader& original) {
  if (cached.schema() != original.schema() || cached.records() != original.records())
    return corrupt(fmt::format("{}: {} records of another schema, not the {} of {}", cached.path(),
                               cached.records(), original.records(), original.path()));
  for (uint64_t i = 0; i < cached.records(); ++i) STOKER_RETURN_IF_ERROR(cached.verify_record(i));
  return Status::ok();
}

}  // namespace

Result<std::shared_ptr<TranscodeCache>> TranscodeCache::open(const std::string& dir,
                                                             uint64_t budget_bytes,
                                                             int64_t max_pixels) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return io_error(fmt::format("{}: cannot make the transcode cache: {}", dir, ec.message()));
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  std::shared_ptr<TranscodeCache> cache(
      new TranscodeCache(dir, budget_bytes, max_pixels, now_ns - kClockSlackNs));
  STOKER_ASSIGN_OR_RETURN(const std::vector<CachedFile> files, list_cached(dir));
  MutexLock lock(cache->mutex_);
  for (const CachedFile& file : files) cache->held_ += file.bytes;
  return cache;
}

uint64_t TranscodeCache::held_bytes() const {
  MutexLock lock(mutex_);
  return held_;
}

ShardReader TranscodeCache::transcoded(ShardReader original, std::string* note) {
  if (!transcodable(original.schema()) || original.records() == 0) return original;
  const std::string path = cached_path(dir_, original);
  Result<ShardReader> cached = ShardReader::open(path);
  if (cached.status().code() == StatusCode::kNotFound) {
    MutexLock lock(mutex_);
    forget(path, 0);  // never written, or deleted by another process since
  } else {
    bool checked = false;
    {
      MutexLock lock(mutex_);
      checked = used_.count(path) > 0;
    }
    const Status check = !cached.is_ok() ? cached.status()
                         : checked       ? Status::ok()
                                         : check_cached(cached.value(), original);
    if (check.is_ok()) {
      touch(path);
      MutexLock lock(mutex_);
      used_[path] = cached.value().file_bytes();
      return std::move(cached).value();
    }
    std::error_code size_ec, ec;
    const uintmax_t size = fs::file_size(path, size_ec);
    if (note != nullptr)
      *note = fmt::format("transcode cache: {} (of {}) is damaged, rebuilt: {}", path,
                          original.path(), check.message());
    fs::remove(path, ec);
    MutexLock lock(mutex_);
    forget(path, size_ec ? 0 : size);
  }
  // Room for the transcode, reserved at the original's size (a transcode is about as large).
  const uint64_t reserved = original.file_bytes();
  {
    MutexLock lock(mutex_);
    if (building_.count(path) || !make_room(reserved)) return original;
    held_ += reserved;
    reserved_ += reserved;
    building_.insert(path);
  }
  Result<ShardReader> built = build(original, path);
  const uint64_t size = built.is_ok() ? built.value().file_bytes() : 0;
  MutexLock lock(mutex_);
  held_ = held_ - reserved + size;
  reserved_ -= reserved;
  building_.erase(path);
  if (!built.is_ok()) return original;
  used_[path] = size;
  return std::move(built).value();
}

void TranscodeCache::forget(const std::string& path, uint64_t bytes) {
  auto used = used_.find(path);
  if (used != used_.end()) {
    bytes = used->second;
    used_.erase(used);
  }
  held_ -= std::min(held_, bytes);
}

bool TranscodeCache::make_room(uint64_t bytes) {
  if (held_ + bytes <= budget_) return true;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  // A full cache of this run's files is the steady state: a unit missed every epoch must not
  // list the folder every time (under the lock), only when others may have made room since.
  if (now < next_listing_ns_) return false;
  next_listing_ns_ = now + kRelistingNs;
  Result<std::vector<CachedFile>> listed = list_cached(dir_);
  if (!listed.is_ok()) return false;
  std::vector<CachedFile> may_go;  // used by no run that may still read them
  uint64_t files = 0, freeable = 0;
  for (CachedFile& file : listed.value()) {
    if (building_.count(file.path)) continue;  // counted in reserved_
    files += file.bytes;
    if (used_.count(file.path) || file.used_ns >= opened_ns_) continue;
    freeable += file.bytes;
    may_go.push_back(std::move(file));
  }
  held_ = files + reserved_;
  if (held_ - freeable + bytes > budget_) return false;
  std::sort(may_go.begin(), may_go.end(),
            [](const CachedFile& a, const CachedFile& b) { return a.used_ns < b.used_ns; });
  for (const CachedFile& file : may_go) {
    if (held_ + bytes <= budget_) break;
    std::error_code ec;
    fs::remove(file.path, ec);  // gone already (another process's eviction): room all the same
    if (!ec) held_ -= file.bytes;
  }
  if (held_ + bytes > budget_) return false;
  next_listing_ns_ = 0;  // room was made: the next unit may find more
  return true;
}

Result<ShardReader> TranscodeCache::build(const ShardReader& original,
                                          const std::string& path) const {
  const Schema& schema = original.schema();
  STOKER_ASSIGN_OR_RETURN(const ImageRecordFields fields, ImageRecordFields::find(schema));
  STOKER_ASSIGN_OR_RETURN(ShardWriter writer, ShardWriter::create(path, schema));
  RecordEncoder encoder(schema);
  for (uint64_t i = 0; i < original.records(); ++i) {
    for (int f = 0; f < static_cast<int>(schema.fields().size()); ++f) {
      const Field& field = schema.fields()[f];
      if (field.is_fixed()) {
        STOKER_RETURN_IF_ERROR(
            encoder.set_fixed(f, original.fixed_field(i, f), field.fixed_bytes()));
        continue;
      }
      STOKER_ASSIGN_OR_RETURN(const ByteSpan bytes, original.variable_field(i, f));
      std::vector<uint8_t> transcoded;  // empty: the image as it is
      if (f == fields.image) {
        // As `stoker convert` stores it; an image that does not transcode (a bad record, whose
        // error the loader reports as the original's) is kept as it is.
        Result<image::ImageHeader> header = image::read_image_header(bytes, max_pixels_);
        if (header.is_ok()) {
          Result<std::vector<uint8_t>> t =
              transcode_for_storage(bytes, header.value(), false, max_pixels_);
          if (t.is_ok()) transcoded = std::move(t).value();
        }
      }
      const ByteSpan stored =
          transcoded.empty() ? bytes : ByteSpan{transcoded.data(), transcoded.size()};
      STOKER_RETURN_IF_ERROR(encoder.set_bytes(f, stored.data, stored.size));
    }
    const std::vector<uint8_t>& record = encoder.encode();
    STOKER_RETURN_IF_ERROR(writer.append(record.data(), record.size()));
  }
  STOKER_RETURN_IF_ERROR(writer.finish());
  return ShardReader::open(path);
}

}  // namespace stoker
