#include "stoker/store/import/transcode_cache.h"

#include <fmt/format.h>

#include <cstdio>
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
  std::shared_ptr<TranscodeCache> cache(new TranscodeCache(dir, budget_bytes, max_pixels));
  uint64_t held = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != kSuffix) continue;
    std::error_code size_ec;
    const uintmax_t size = entry.file_size(size_ec);
    if (!size_ec) held += size;
  }
  if (ec)
    return io_error(fmt::format("{}: cannot list the transcode cache: {}", dir, ec.message()));
  MutexLock lock(cache->mutex_);
  cache->held_ = held;
  return cache;
}

uint64_t TranscodeCache::held_bytes() const {
  MutexLock lock(mutex_);
  return held_;
}

ShardReader TranscodeCache::transcoded(ShardReader original) {
  if (!transcodable(original.schema()) || original.records() == 0) return original;
  const std::string path = cached_path(dir_, original);
  std::error_code ec;
  if (fs::exists(path, ec)) {
    Result<ShardReader> cached = ShardReader::open(path);
    {
      MutexLock lock(mutex_);
      if (cached.is_ok() && checked_.count(path)) return std::move(cached).value();
    }
    Status check = cached.is_ok() ? check_cached(cached.value(), original) : cached.status();
    if (check.is_ok()) {
      MutexLock lock(mutex_);
      checked_.insert(path);
      return std::move(cached).value();
    }
    std::error_code size_ec;
    const uintmax_t size = fs::file_size(path, size_ec);
    fmt::print(stderr, "stoker: transcode cache: {} (of {}) is damaged, rebuilt: {}\n", path,
               original.path(), check.message());
    fs::remove(path, ec);
    MutexLock lock(mutex_);
    held_ -= std::min<uint64_t>(held_, size_ec ? 0 : size);
  }
  // Room for the transcode, reserved at the original's size (a transcode is about as large).
  const uint64_t reserved = original.file_bytes();
  {
    MutexLock lock(mutex_);
    if (held_ + reserved > budget_) return original;
    held_ += reserved;
  }
  Result<ShardReader> built = build(original, path);
  const uint64_t size = built.is_ok() ? built.value().file_bytes() : 0;
  MutexLock lock(mutex_);
  held_ = held_ - reserved + size;
  if (!built.is_ok()) return original;
  checked_.insert(path);
  return std::move(built).value();
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
