#include "stoker/access/remote_manifest.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"

namespace stoker::remote {
namespace {

namespace fs = std::filesystem;

std::string version_path(const std::string& dir, uint64_t xxh3) {
  return fmt::format("{}/manifest-{:016x}.json", dir, xxh3);
}

// The version source.json names, if it is there and its manifest file too.
struct KnownVersion {
  std::string etag;
  uint64_t xxh3 = 0;
  std::string text;
};

std::optional<KnownVersion> known_version(const std::string& dir) {
  Result<std::string> source = read_file(dir + "/source.json", 1 << 16);
  if (!source.is_ok()) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(source.value(), nullptr, false);
  if (!j.is_object() || !j.contains("etag") || !j["etag"].is_string() ||
      !j.contains("manifest_xxh3") || !j["manifest_xxh3"].is_string())
    return std::nullopt;
  KnownVersion known;
  known.etag = j["etag"].get<std::string>();
  try {
    known.xxh3 = std::stoull(j["manifest_xxh3"].get<std::string>(), nullptr, 16);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  Result<std::string> text = read_file(version_path(dir, known.xxh3), kMaxManifestBytes);
  if (known.etag.empty() || !text.is_ok() ||
      xxh3_64(text.value().data(), text.value().size()) != known.xxh3)
    return std::nullopt;
  known.text = std::move(text).value();
  return known;
}

}  // namespace

Result<RemoteManifest> fetch_manifest(const ObjectStore& store, const std::string& source,
                                      const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("cannot make the cache folder " + dir + ": " + ec.message());
  const std::string url = store.describe(kManifestName);
  const std::optional<KnownVersion> known = known_version(dir);
  std::string text;
  const ByteSink sink = [&](uint64_t offset, const char* data, size_t size) {
    if (offset > kMaxManifestBytes || size > kMaxManifestBytes - offset)  // never wraps
      return invalid_argument(
          fmt::format("{}: larger than {} bytes, the limit for this file", url, kMaxManifestBytes));
    if (offset + size > text.size()) text.resize(offset + size);
    text.replace(offset, size, data, size);
    return Status::ok();
  };
  STOKER_ASSIGN_OR_RETURN(
      HttpResponse response,
      store.get(kManifestName, std::nullopt, sink, /*if_match=*/"",
                /*cancelled=*/nullptr, known ? known->etag : "", kSmallRequestSeconds));
  RemoteManifest fetched;
  fetched.etag = response.etag;
  if (response.status == 304 && known) {
    text = known->text;
    fetched.xxh3 = known->xxh3;
  } else {
    fetched.xxh3 = xxh3_64(text.data(), text.size());
    fetched.changed = !known || known->xxh3 != fetched.xxh3;
  }
  STOKER_ASSIGN_OR_RETURN(fetched.manifest, Manifest::parse(text, url));
  if (response.status != 304) {
    STOKER_RETURN_IF_ERROR(write_file_atomically(version_path(dir, fetched.xxh3), text));
    const nlohmann::json j = {{"source", source},
                              {"etag", fetched.etag},
                              {"manifest_xxh3", fmt::format("{:016x}", fetched.xxh3)}};
    STOKER_RETURN_IF_ERROR(write_file_atomically(dir + "/source.json", j.dump() + "\n"));
  }
  return fetched;
}

}  // namespace stoker::remote
