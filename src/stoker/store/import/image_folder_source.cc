#include "stoker/store/import/image_folder_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "stoker/store/image_record.h"
#include "stoker/store/import/image_folder.h"
#include "stoker/store/import/image_folder_listing_cache.h"
#include "stoker/util/atomic_file.h"

namespace stoker {

Result<std::shared_ptr<ImageFolderSource>> ImageFolderSource::open(
    const std::string& root, const ImageFolderSourceOptions& options) {
  if (options.files_per_unit < 1)
    return invalid_argument(fmt::format("{}: files per unit {} is not a positive number", root,
                                        options.files_per_unit));
  std::shared_ptr<ImageFolderSource> source(new ImageFolderSource());
  source->root_ = root;
  source->options_ = options;
  STOKER_ASSIGN_OR_RETURN(source->listing_,
                          cached_image_folder_listing(root, options.listing_cache_dir));
  const std::vector<ImageFolderSample>& samples = source->listing_.samples;
  Manifest& manifest = source->manifest_;
  manifest.schema = image_record_schema();
  manifest.records = samples.size();
  manifest.source = root;
  manifest.class_names = source->listing_.classes;
  const std::string prefix = root + "/";
  for (size_t first = 0; first < samples.size(); first += options.files_per_unit) {
    const size_t end = std::min(samples.size(), first + options.files_per_unit);
    const std::string& path = samples[first].path;
    ShardInfo unit;
    unit.file = path.rfind(prefix, 0) == 0 ? path.substr(prefix.size()) : path;
    unit.records = end - first;
    manifest.shards.push_back(std::move(unit));
    source->unit_starts_.push_back(first);
  }
  source->unit_starts_.push_back(samples.size());
  source->readers_.assign(manifest.shards.size(), nullptr);
  MutexLock lock(source->mutex_);
  source->units_.resize(manifest.shards.size());
  return source;
}

std::string ImageFolderSource::describe() const {
  return fmt::format("{} (an image folder: {} images, {} classes, read in place)", root_,
                     listing_.samples.size(), listing_.classes.size());
}

ShardReader ImageFolderSource::read_unit(int u, std::map<uint64_t, std::string>& bad) const {
  static const ImageRecordFields fields = ImageRecordFields::find(manifest_.schema).value();
  std::vector<std::vector<uint8_t>> records;
  for (uint64_t i = unit_starts_[u]; i < unit_starts_[u + 1]; ++i) {
    const ImageFolderSample& sample = listing_.samples[i];
    ImageRecordValues values;
    values.label = sample.label;
    Result<std::string> file = read_file(sample.path, kMaxImageFileBytes);
    if (file.is_ok()) {
      values.original = {reinterpret_cast<const uint8_t*>(file.value().data()),
                         file.value().size()};
      Result<image::ImageHeader> header =
          image::read_image_header(values.original, options_.max_pixels);
      if (header.is_ok()) {
        values.stored = values.original;
        values.height = header.value().height;
        values.width = header.value().width;
      } else {
        bad[i] = header.status().message();
      }
    } else {
      bad[i] = image_file_read_error(file.status(), sample.path);
    }
    // A file is at most kMaxImageFileBytes: its record always encodes.
    records.push_back(encode_image_record(manifest_.schema, fields, values).value());
  }
  return ShardReader::in_memory(listing_.samples[unit_starts_[u]].path, manifest_.schema, records);
}

Result<ShardPin> ImageFolderSource::acquire(int u, const std::function<bool()>& /*cancelled*/) {
  const auto start = std::chrono::steady_clock::now();
  MutexLock lock(mutex_);
  lock.wait(read_, [&]() STOKER_REQUIRES(mutex_) { return !units_[u].reading; });
  if (!units_[u].reader) {
    units_[u].reading = true;
    lock.unlock();
    std::map<uint64_t, std::string> bad;
    auto reader = std::make_unique<ShardReader>(read_unit(u, bad));
    lock.lock();
    Unit& unit = units_[u];
    unit.reading = false;
    read_bytes_ += reader->file_bytes();
    readers_[u] = reader.get();
    unit.reader = std::move(reader);
    bad_.merge(bad);
    read_.notify_all();
  } else if (units_[u].pins == 0) {
    idle_.erase(std::find(idle_.begin(), idle_.end(), u));
  }
  ++units_[u].pins;
  wait_ns_ +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  // The hold keeps the source alive; letting it go releases the pin (it deletes nothing).
  std::shared_ptr<void> hold(this, [self = shared_from_this(), u](void*) { self->release(u); });
  return ShardPin(u, std::move(hold));
}

void ImageFolderSource::release(int u) {
  MutexLock lock(mutex_);
  if (--units_[u].pins > 0) return;
  idle_.push_back(u);
  sweep();
}

bool ImageFolderSource::wanted(int u) const {
  return advised_ && schedule_.next_use(u, position_) <= position_ + lookahead_;
}

void ImageFolderSource::sweep() {
  auto kept = std::partition(idle_.begin(), idle_.end(),
                             [&](int u) STOKER_REQUIRES(mutex_) { return wanted(u); });
  for (auto it = kept; it != idle_.end(); ++it) {
    readers_[*it] = nullptr;
    units_[*it].reader.reset();
  }
  idle_.erase(kept, idle_.end());
}

void ImageFolderSource::advise(const ShardSchedule& schedule, int64_t lookahead) {
  MutexLock lock(mutex_);
  schedule_ = schedule;
  advised_ = true;
  lookahead_ = lookahead;
  position_ = 0;
  sweep();
}

void ImageFolderSource::advance(int64_t position) {
  MutexLock lock(mutex_);
  position_ = position;
  sweep();
}

ShardSourceStats ImageFolderSource::stats() const {
  MutexLock lock(mutex_);
  ShardSourceStats stats;
  stats.fetched_bytes = read_bytes_;
  stats.wait_ns = wait_ns_;
  return stats;
}

Status ImageFolderSource::record_error(int /*unit*/, uint64_t /*record*/, uint64_t global,
                                       const Status& status) const {
  MutexLock lock(mutex_);
  auto bad = bad_.find(global);
  return Status(status.code(),
                fmt::format("{}: {} (dataset record {})", listing_.samples[global].path,
                            bad != bad_.end() ? bad->second : status.message(), global));
}

}  // namespace stoker
