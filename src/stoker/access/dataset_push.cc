#include "stoker/access/dataset_push.h"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <set>

#include "stoker/store/data_location.h"
#include "stoker/store/dataset.h"
#include "stoker/store/dataset_check.h"
#include "stoker/util/utf8.h"

namespace stoker::remote {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kShardEnding = ".stk";

bool ends_with(std::string_view text, std::string_view ending) {
  return text.size() >= ending.size() && text.substr(text.size() - ending.size()) == ending;
}

// One dataset to push: its directory, its folder under the URL ("" or "train/"), its manifest
// with the names it gets on the server.
struct Upload {
  std::string dir;
  std::string folder;
  Manifest local;
  Manifest remote;
};

Result<uint64_t> file_bytes(const std::string& path) {
  std::error_code ec;
  const uint64_t bytes = fs::file_size(path, ec);
  if (ec) return io_error(printable(path) + ": " + ec.message());
  return bytes;
}

// The dataset at `dir`, checked as `stoker verify` checks it, and each shard's size within
// `max_bytes`.
Result<Upload> checked_dataset(const std::string& dir, const std::string& folder,
                               uint64_t max_bytes) {
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const Dataset> dataset, Dataset::open(dir));
  std::string first;
  const uint64_t bad = check_records(*dataset, [&first](const Status& s) {
    if (first.empty()) first = s.message();
  });
  if (bad > 0)
    return corrupt(
        fmt::format("{} ({} bad record{} in {}; `stoker verify` lists them); nothing "
                    "was uploaded",
                    first, bad, bad == 1 ? "" : "s", printable(dir)));
  Upload upload{dir, folder, dataset->manifest(), dataset->manifest()};
  for (ShardInfo& shard : upload.remote.shards) {
    const std::string path = (fs::path(dir) / shard.file).string();
    STOKER_ASSIGN_OR_RETURN(const uint64_t bytes, file_bytes(path));
    if (bytes > max_bytes)
      return unsupported(
          fmt::format("{}: {} bytes are over the {} that one upload may hold (S3's limit; stoker "
                      "push has no multipart upload yet): convert with a smaller --shard-mb; "
                      "nothing was uploaded",
                      printable(path), bytes, max_bytes));
    shard.file = content_qualified_name(shard);
  }
  return upload;
}

// Sends shard `s` of `upload` unless the server has it under its name with its size; true if
// it was sent.
Result<bool> upload_shard(const ObjectStore& store, const Upload& upload, size_t s) {
  const std::string name = upload.folder + upload.remote.shards[s].file;
  const std::string path = (fs::path(upload.dir) / upload.local.shards[s].file).string();
  STOKER_ASSIGN_OR_RETURN(const uint64_t bytes, file_bytes(path));
  Result<HttpResponse> head = store.head(name);
  if (head.is_ok() && head.value().size == bytes) return false;
  if (!head.is_ok() && head.status().code() != StatusCode::kNotFound) return head.status();
  STOKER_RETURN_IF_ERROR(store.put_file(name, path).status());
  return true;
}

// Deletes the shards of `present` (the objects directly in `upload.folder`, listed before its
// new manifest went up) that its new manifest does not name.
Result<uint64_t> prune(const ObjectStore& store, const Upload& upload,
                       const std::vector<std::string>& present) {
  std::set<std::string> named;
  for (const ShardInfo& shard : upload.remote.shards) named.insert(shard.file);
  uint64_t pruned = 0;
  for (const std::string& name : present) {
    if (!ends_with(name, kShardEnding) || named.count(name) > 0) continue;
    STOKER_RETURN_IF_ERROR(store.remove(upload.folder + name).status());
    ++pruned;
  }
  return pruned;
}

}  // namespace

std::string content_qualified_name(const ShardInfo& shard) {
  const std::string checksum = fmt::format(".{:016x}", shard.index_checksum);
  const std::string_view file = shard.file;
  const std::string_view stem =
      ends_with(file, kShardEnding) ? file.substr(0, file.size() - kShardEnding.size()) : file;
  if (ends_with(stem, checksum)) return shard.file;
  return fmt::format("{}{}{}", stem, checksum, kShardEnding);
}

Status check_push_target(const RemoteUrl& url, const ObjectStore& store) {
  if (url.scheme != UrlScheme::kS3)
    return unsupported(url.redacted() +
                       ": an HTTP(S) URL is read-only; push to an s3://bucket/prefix");
  STOKER_RETURN_IF_ERROR(store.check_bucket());
  const Status manifest = store.head(kManifestName).status();
  return manifest.code() == StatusCode::kNotFound ? Status::ok() : manifest;
}

Result<PushSummary> push_dataset(const std::string& dir, const RemoteUrl& url,
                                 const ObjectStore& store, const PushOptions& options) {
  STOKER_RETURN_IF_ERROR(check_push_target(url, store));
  STOKER_ASSIGN_OR_RETURN(const DataLocation where, locate_data(dir));
  if (where.folder) {
    // A reader of the URL takes its manifest.json before any train/ or test/ under it.
    Result<HttpResponse> single = store.head(kManifestName);
    if (single.is_ok())
      return invalid_argument(fmt::format(
          "{}: holds a single dataset ({}), which readers of the URL would go on reading "
          "instead of the folder of datasets {} holds; push it to another prefix, or delete "
          "that manifest first; nothing was uploaded",
          url.redacted(), kManifestName, printable(dir)));
    if (single.status().code() != StatusCode::kNotFound) return single.status();
  }
  std::vector<Upload> uploads;
  for (const std::string& path : where.datasets) {
    const std::string folder = where.folder ? fs::path(path).filename().string() + "/" : "";
    STOKER_ASSIGN_OR_RETURN(Upload upload, checked_dataset(path, folder, options.max_object_bytes));
    uploads.push_back(std::move(upload));
  }
  PushSummary summary;
  for (const Upload& upload : uploads) {
    for (size_t s = 0; s < upload.remote.shards.size(); ++s) {
      if (options.stop_requested && options.stop_requested())
        return Status(StatusCode::kCancelled,
                      fmt::format("the push to {} stopped after {} of its shards, before its "
                                  "manifest{}: the URL still holds its previous version; push "
                                  "again to finish (what is there is not sent again)",
                                  url.redacted(), summary.uploaded + summary.present,
                                  uploads.size() == 1 ? "" : "s"));
      STOKER_ASSIGN_OR_RETURN(const bool sent, upload_shard(store, upload, s));
      ++(sent ? summary.uploaded : summary.present);
      if (sent) summary.uploaded_bytes += upload.remote.shards[s].bytes;
    }
    summary.shards += upload.remote.shards.size();
    summary.records += upload.remote.records;
  }
  // Listed (and the listings checked) before any manifest changes: a listing that cannot be
  // trusted stops the push while the URL still holds its previous version. Every shard the new
  // manifests name is up already, so the listings hold all that prune may delete.
  std::vector<std::vector<std::string>> listings;
  if (options.prune) {
    for (const Upload& upload : uploads) {
      STOKER_ASSIGN_OR_RETURN(std::vector<std::string> present, store.list(upload.folder));
      listings.push_back(std::move(present));
    }
  }
  for (const Upload& upload : uploads) {
    STOKER_RETURN_IF_ERROR(
        store.put_bytes(upload.folder + kManifestName, upload.remote.to_json()).status());
    std::string written = store.describe(upload.folder);
    if (!written.empty() && written.back() == '/') written.pop_back();
    summary.datasets.push_back(std::move(written));
  }
  if (options.prune) {
    for (size_t u = 0; u < uploads.size(); ++u) {
      STOKER_ASSIGN_OR_RETURN(const uint64_t pruned, prune(store, uploads[u], listings[u]));
      summary.pruned += pruned;
    }
  }
  return summary;
}

}  // namespace stoker::remote
