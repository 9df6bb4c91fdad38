#include "stoker/store/import/class_folder_source.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>

#include "stoker/store/import/image_folder.h"
#include "stoker/util/atomic_file.h"

namespace stoker {

Status ClassFolderSource::lay_out(std::string root, ImageFolderListing listing, Schema schema,
                                  const ClassFolderSourceOptions& options,
                                  std::shared_ptr<const InPlaceFiles> files,
                                  ClassFolderParts parts) {
  if (options.files_per_unit < 1)
    return invalid_argument(fmt::format("{}: files per unit {} is not a positive number", root,
                                        options.files_per_unit));
  if (files && files->names().size() != listing.samples.size())
    return invalid_argument(root + ": not one file per sample");
  if (!parts.counts.empty() &&
      ((files && !options.record_bytes) || parts.counts.size() != listing.samples.size()))
    return invalid_argument(root + ": not one count of samples per local file or record");
  root_ = std::move(root);
  listing_ = std::move(listing);
  parts_ = std::move(parts);
  const std::vector<ImageFolderSample>& samples = listing_.samples;
  const auto samples_of = [&](uint64_t i) -> uint64_t {
    return parts_.counts.empty() || parts_.bad.count(i) ? 1 : parts_.counts[i];
  };
  unit_of_.assign(samples.size(), -1);
  uint64_t total = 0;
  for (uint64_t i = 0; i < samples.size(); ++i) {
    if (samples_of(i) == 0) continue;
    unit_files_.push_back(i);
    sample_starts_.push_back(total);
    total += samples_of(i);
  }
  sample_starts_.push_back(total);
  Manifest manifest;
  manifest.schema = std::move(schema);
  manifest.records = total;
  manifest.source = root_;
  manifest.class_names = listing_.classes;
  manifest.sample_parts = parts_.text;
  const std::string prefix = root_ + "/";
  for (size_t first = 0; first < unit_files_.size(); first += options.files_per_unit) {
    const size_t end = std::min(unit_files_.size(), first + options.files_per_unit);
    const std::string& path = samples[unit_files_[first]].path;
    ShardInfo unit;
    unit.file = path.rfind(prefix, 0) == 0 ? path.substr(prefix.size()) : path;
    unit.records = sample_starts_[end] - sample_starts_[first];
    for (size_t k = first; k < end; ++k) {
      unit_of_[unit_files_[k]] = static_cast<int>(manifest.shards.size());
      // Remote files' sizes: what a cache's budget is checked against.
      if (!files || options.record_bytes) continue;
      const Result<FileIdentity> identity = files->identity(unit_files_[k]);
      if (identity.is_ok()) unit.bytes += identity.value().size;
    }
    manifest.shards.push_back(std::move(unit));
    unit_starts_.push_back(first);
  }
  unit_starts_.push_back(unit_files_.size());
  set_manifest(std::move(manifest));
  record_bytes_ = options.record_bytes;
  if (files) {
    files_ = std::move(files);
    if (!record_bytes_) set_units_ahead(options.units_ahead);
  }
  return Status::ok();
}

Result<std::vector<FileStamp>> ClassFolderSource::file_stamps() const {
  std::vector<FileStamp> stamps;
  for (size_t i = 0; i < listing_.samples.size(); ++i) {
    FileStamp stamp{listing_.samples[i].path, 0, -1};
    if (files_) {
      const Result<FileIdentity> identity = files_->identity(i);
      if (identity.is_ok())
        stamp.size = identity.value().size, stamp.stamp = identity.value().stamp;
    } else if (struct stat st{}; ::stat(stamp.name.c_str(), &st) == 0) {
      stamp.size = static_cast<uint64_t>(st.st_size);
      stamp.stamp = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    }
    stamps.push_back(std::move(stamp));
  }
  return stamps;
}

Result<ShardReader> ClassFolderSource::read_unit(int u, std::map<uint64_t, std::string>& bad,
                                                 const std::function<bool()>& cancelled) const {
  std::vector<std::vector<uint8_t>> records;
  std::vector<int64_t> counts;
  for (uint64_t k = unit_starts_[u]; k < unit_starts_[u + 1]; ++k) {
    const uint64_t i = unit_files_[k];
    std::string why;
    Result<std::string> file = invalid_argument("found bad when laid out");
    if (const auto found = parts_.bad.find(i); found != parts_.bad.end()) {
      why = found->second;
    } else {
      file = read_sample(i, cancelled);
      if (file.status().code() == StatusCode::kCancelled) return file.status();  // no bad record
      if (!file.is_ok()) why = file.status().message();
    }
    records.push_back(
        make_record(listing_.samples[i].label, file.is_ok() ? &file.value() : nullptr, why));
    counts.push_back(static_cast<int64_t>(sample_starts_[k + 1] - sample_starts_[k]));
    for (uint64_t s = sample_starts_[k]; !why.empty() && s < sample_starts_[k + 1]; ++s)
      bad[s] = why;
  }
  const std::string& name = listing_.samples[unit_files_[unit_starts_[u]]].path;
  if (parts_.counts.empty()) return ShardReader::in_memory(name, manifest().schema, records);
  return ShardReader::in_memory(name, manifest().schema, records, counts);
}

Result<std::string> ClassFolderSource::read_sample(uint64_t i,
                                                   const std::function<bool()>& cancelled) const {
  const std::string& path = listing_.samples[i].path;
  if (record_bytes_) return record_bytes_(i);
  if (!files_) {
    Result<std::string> file = read_file(path, max_file_bytes_);
    if (!file.is_ok())
      return Status(file.status().code(), image_file_read_error(file.status(), path));
    return file;
  }
  // A remote file's errors name its URL, the sample's path.
  const auto without_path = [&](const Status& status) {
    return Status(status.code(), image_file_read_error(status, path));
  };
  Result<OpenFile> open = files_->open(i, cancelled);
  if (!open.is_ok()) return without_path(open.status());
  const uint64_t size = open.value().identity.size;
  if (size > max_file_bytes_)
    return invalid_argument(fmt::format("larger than {} bytes", max_file_bytes_));
  std::string bytes(size, '\0');
  Result<size_t> got = read_at(open.value().fd, path, open.value().offset,
                               reinterpret_cast<uint8_t*>(bytes.data()), size);
  if (!got.is_ok()) return without_path(got.status());
  if (got.value() != size) return io_error("its cached copy is short");
  return bytes;
}

void ClassFolderSource::units_ahead(const std::vector<int>& units) {
  if (!files_ || record_bytes_) return;
  std::vector<size_t> files;
  for (const int u : units)
    for (uint64_t k = unit_starts_[u]; k < unit_starts_[u + 1]; ++k)
      files.push_back(unit_files_[k]);
  files_->fetch_ahead(files);
}

void ClassFolderSource::reads_planned(std::function<int64_t(int unit)> next_read,
                                      int64_t position) {
  if (!files_ || record_bytes_) return;
  // A sample's file is read when its unit is.
  files_->plan([next_read = std::move(next_read),
                unit_of = &unit_of_](size_t file) { return next_read((*unit_of)[file]); },
               position);
}

Status ClassFolderSource::record_error(int /*unit*/, uint64_t /*record*/, uint64_t global,
                                       const Status& status) const {
  const std::string bad = bad_reason(global);
  // The file of sample `global`: the last whose first sample is at or before it.
  const size_t k =
      static_cast<size_t>(std::upper_bound(sample_starts_.begin(), sample_starts_.end(), global) -
                          sample_starts_.begin() - 1);
  const std::string clip = parts_.counts.empty()
                               ? ""
                               : fmt::format(", the file's sample {}", global - sample_starts_[k]);
  return Status(status.code(),
                fmt::format("{}: {} (dataset record {}{})", listing_.samples[unit_files_[k]].path,
                            bad.empty() ? status.message() : bad, global, clip));
}

}  // namespace stoker
