#include "stoker/store/dataset_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "stoker/store/record_view.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/resolved_path.h"

namespace fs = std::filesystem;

namespace stoker {
namespace {

// The file a writer puts in its staging directory first, holding the directory's name: what
// proves a `DIR.partial-*` directory is stoker's to remove (a user's folder of that name has
// none).
constexpr const char* kStagingMarker = ".stoker-staging";

// Whether `entry` is a staging directory a writer of DIR (whose staging names start with
// `prefix`) left: named prefix + a process id, and either empty (killed before its marker) or
// holding the marker that names it.
bool is_stoker_staging(const fs::path& entry, const std::string& prefix) {
  const std::string name = entry.filename().string();
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.find_first_not_of("0123456789", prefix.size()) != std::string::npos)
    return false;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(entry, ec))) return false;
  if (fs::is_empty(entry, ec) && !ec) return true;
  Result<std::string> marker = read_file((entry / kStagingMarker).string(), 4096);
  return marker.is_ok() && marker.value() == name;
}

// Removes the staging directories of DIR that no writer holds (left by killed processes): each
// writer holds the lock of its own. Only stoker's (is_stoker_staging): a user's folder named
// like one is left alone. kAlreadyExists if another writer holds one: two writers of one
// dataset find out at the start, not when the second one's rename fails at the end.
Status clear_other_staging(const fs::path& dir, const std::string& own) {
  const std::string prefix = dir.filename().string() + ".partial-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir.parent_path(), ec)) {
    if (entry.path().filename() == own || !is_stoker_staging(entry.path(), prefix)) continue;
    Result<DirectoryLock> held = DirectoryLock::acquire(entry.path().string(), "staging directory");
    if (held.is_ok()) {
      fs::remove_all(entry.path(), ec);
    } else if (held.status().code() == StatusCode::kAlreadyExists) {
      return already_exists(dir.string() + ": another process is writing this dataset (it holds " +
                            entry.path().string() + "); wait for it to end or write elsewhere");
    }
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<DatasetWriter>> DatasetWriter::create(const std::string& dir,
                                                             const Schema& schema,
                                                             DatasetWriterOptions options) {
  // The path the kernel reaches (a link's `..` is its target's parent): the one the output
  // checks resolved, never a textual reading of it.
  STOKER_ASSIGN_OR_RETURN(std::string resolved, resolved_path(dir));
  const fs::path path(resolved);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec)))
    return already_exists(dir + ": output directory exists");
  fs::create_directories(path.parent_path(), ec);
  if (ec) return io_error(path.parent_path().string() + ": cannot create: " + ec.message());
  const std::string name = path.filename().string() + ".partial-" + std::to_string(::getpid());
  const std::string staging = (path.parent_path() / name).string();
  // A stale one of this process id (a killed writer's), never a user's folder of the name.
  if (is_stoker_staging(staging, path.filename().string() + ".partial-"))
    fs::remove_all(staging, ec);
  if (!fs::create_directory(staging, ec))
    return io_error(staging + ": cannot create: " + (ec ? ec.message() : "exists"));
  Result<DirectoryLock> lock = DirectoryLock::acquire(staging, "staging directory");
  Status cleared = lock.status();
  if (cleared.is_ok()) cleared = write_file_atomically(staging + "/" + kStagingMarker, name);
  if (cleared.is_ok()) cleared = clear_other_staging(path, name);
  if (!cleared.is_ok()) {
    fs::remove_all(staging, ec);
    return cleared;
  }
  Manifest manifest;
  manifest.format_version = schema.format_version();
  manifest.schema = schema;
  for (const Field& field : schema.fields()) {
    if (field.is_variable_length()) manifest.max_lengths[field.name] = 0;
  }
  manifest.source = options.source;
  manifest.class_names = options.class_names;
  manifest.record_shuffle_seed = options.record_shuffle_seed;
  auto writer = std::unique_ptr<DatasetWriter>(
      new DatasetWriter(resolved, staging, std::move(manifest), std::move(options)));
  writer->staging_lock_.emplace(std::move(lock).value());
  return writer;
}

DatasetWriter::DatasetWriter(std::string dir, std::string staging, Manifest manifest,
                             DatasetWriterOptions options)
    : dir_(std::move(dir)),
      staging_(std::move(staging)),
      manifest_(std::move(manifest)),
      options_(std::move(options)) {
  const std::vector<Field>& fields = manifest_.schema.fields();
  for (size_t f = 0; f < fields.size(); ++f) {
    if (const int channels = statistics_channels(fields[f]); channels > 0)
      statistics_.push_back({static_cast<int>(f), ChannelStatistics(channels), 0});
  }
}

Status DatasetWriter::count_rows(const uint8_t* record, size_t size) {
  const Schema& schema = manifest_.schema;
  const ByteSpan span{record, size};
  const auto where = [&](const Status& status) {
    return invalid_argument(
        fmt::format("{}: record {}: {}", dir_, manifest_.records, status.message()));
  };
  if (Status layout = check_record_layout(schema, span); !layout.is_ok()) return where(layout);
  for (int f = 0; f < static_cast<int>(schema.fields().size()); ++f) {
    if (!schema.fields()[f].is_variable_length()) continue;
    Result<VariableRows> rows = variable_rows(schema, span, f);  // checked above
    if (!rows.is_ok()) return where(rows.status());
    uint64_t& most = manifest_.max_lengths[schema.fields()[f].name];
    most = std::max(most, rows.value().rows);
  }
  return Status::ok();
}

DatasetWriter::~DatasetWriter() {
  if (!finished_) {
    shard_.reset();
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
}

Status DatasetWriter::append(const uint8_t* record, size_t size) {
  if (finished_) return Status(StatusCode::kInternal, dir_ + ": append after finish");
  if (options_.stop_requested && options_.stop_requested())
    return Status(StatusCode::kCancelled, dir_ + ": stopped before it was complete");
  // A bad record is refused before anything is written for it.
  if (!manifest_.max_lengths.empty()) STOKER_RETURN_IF_ERROR(count_rows(record, size));
  if (shard_ && shard_->records() > 0 && shard_->projected_bytes(size) > options_.shard_bytes)
    STOKER_RETURN_IF_ERROR(finish_shard());
  if (!shard_) {
    std::string name = fmt::format("shard-{:05d}.stk", manifest_.shards.size());
    STOKER_ASSIGN_OR_RETURN(ShardWriter writer,
                            ShardWriter::create(staging_ + "/" + name, manifest_.schema));
    shard_.emplace(std::move(writer));
  }
  STOKER_RETURN_IF_ERROR(shard_->append(record, size));
  ++manifest_.records;
  // The record is at least the schema's minimum size (the shard writer checked): its fixed
  // fields are all there.
  for (FieldAccumulator& acc : statistics_) {
    const Field& field = manifest_.schema.fields()[acc.field];
    if (!field.is_fixed()) continue;
    acc.pixels.add_planes(record + manifest_.schema.fixed_offset(acc.field),
                          static_cast<size_t>(field.num_elements() / acc.pixels.channels()));
    ++acc.records;
  }
  return Status::ok();
}

Status DatasetWriter::add_decoded_statistics(int field, const ChannelStatistics& pixels) {
  const auto acc = std::find_if(statistics_.begin(), statistics_.end(),
                                [&](const FieldAccumulator& a) { return a.field == field; });
  const std::vector<Field>& fields = manifest_.schema.fields();
  if (acc == statistics_.end() || fields[field].is_fixed())
    return invalid_argument(
        fmt::format("{}: field {} is not a bytes field: decoded statistics are for encoded images",
                    dir_, field));
  if (acc->records + 1 != manifest_.records)
    return invalid_argument(
        fmt::format("{}: decoded statistics of field '{}' given for {} records of {}: one per "
                    "record, after its append()",
                    dir_, fields[field].name, acc->records + 1, manifest_.records));
  if (const Status merged = acc->pixels.merge(pixels); !merged.is_ok())
    return invalid_argument(
        fmt::format("{}: field '{}': {}", dir_, fields[field].name, merged.message()));
  ++acc->records;
  return Status::ok();
}

Status DatasetWriter::finish_statistics() {
  for (const FieldAccumulator& acc : statistics_) {
    const std::string& name = manifest_.schema.fields()[acc.field].name;
    if (acc.records != 0 && acc.records != manifest_.records)
      return invalid_argument(
          fmt::format("{}: decoded statistics of field '{}' were given for {} of the {} records",
                      dir_, name, acc.records, manifest_.records));
    FieldStatistics stats = acc.pixels.summary();
    if (stats.pixels > 0 &&
        std::all_of(stats.std.begin(), stats.std.end(), [](double s) { return s > 0; }))
      manifest_.statistics[name] = std::move(stats);
  }
  return Status::ok();
}

Status DatasetWriter::finish_shard() {
  STOKER_RETURN_IF_ERROR(shard_->finish());
  ShardInfo info;
  info.file = fs::path(shard_->path()).filename().string();
  info.records = shard_->records();
  info.index_checksum = shard_->index_checksum();
  std::error_code ec;
  info.bytes = fs::file_size(shard_->path(), ec);
  if (ec) return io_error(shard_->path() + ": " + ec.message());
  manifest_.shards.push_back(std::move(info));
  shard_.reset();
  return Status::ok();
}

Status DatasetWriter::finish() {
  if (finished_) return Status::ok();
  if (shard_) STOKER_RETURN_IF_ERROR(finish_shard());
  STOKER_RETURN_IF_ERROR(finish_statistics());
  STOKER_RETURN_IF_ERROR(manifest_.save(staging_));
  std::error_code ec;
  fs::rename(staging_, dir_, ec);
  if (ec) return io_error(dir_ + ": cannot move dataset into place: " + ec.message());
  finished_ = true;
  staging_lock_.reset();  // the lock moved with the directory; nobody needs it any more
  // A kill before this leaves the marker in a complete dataset, where readers ignore it.
  fs::remove(fs::path(dir_) / kStagingMarker, ec);
  STOKER_RETURN_IF_ERROR(fsync_directory(dir_));
  return fsync_directory(fs::path(dir_).parent_path().string());
}

}  // namespace stoker
