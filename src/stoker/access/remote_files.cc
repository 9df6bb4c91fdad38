#include "stoker/access/remote_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "stoker/access/remote_objects.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/import/webdataset_tars.h"
#include "stoker/util/checksum.h"

namespace stoker::remote {
namespace {

bool has_suffix(const std::string& name, const std::string& suffix) {
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The URLs one line of a spec names: an s3:// folder's files with `suffix`, or a brace
// pattern's URLs.
Result<std::vector<std::string>> file_urls(const std::string& line, const std::string& suffix) {
  if (!is_remote_url(line))
    return invalid_argument(shown_location(line) +
                            ": not a URL (remote data names every file by URL)");
  if (line.back() != '/') return expand_braces(line);
  STOKER_ASSIGN_OR_RETURN(RemoteUrl folder, parse_remote_url(line));
  if (folder.scheme != UrlScheme::kS3)
    return invalid_argument(folder.redacted() +
                            "/: an http(s):// folder cannot be listed; name its files, e.g. "
                            "as a brace pattern (data-{000..099}" +
                            suffix + ")");
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const ObjectStore> store, store_of(folder));
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> names, store->list(""));
  std::vector<std::string> urls;
  for (const std::string& name : names)
    if (has_suffix(name, suffix)) urls.push_back(line + name);
  std::sort(urls.begin(), urls.end());
  if (urls.empty())
    return not_found(folder.redacted() + "/: no " + suffix + " objects in this folder");
  return urls;
}

}  // namespace

Result<std::shared_ptr<const RemoteFiles>> RemoteFiles::open(const std::string& spec,
                                                             const std::string& suffix,
                                                             std::shared_ptr<ShardCache> cache) {
  std::vector<std::string> urls, shown;
  std::istringstream lines(spec);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    shown.push_back(redact_url_text(line));
    STOKER_ASSIGN_OR_RETURN(std::vector<std::string> expanded, file_urls(line, suffix));
    urls.insert(urls.end(), expanded.begin(), expanded.end());
  }
  if (urls.empty()) return invalid_argument("no files named");
  std::string location;
  for (const std::string& line : shown) location += (location.empty() ? "" : "\n") + line;

  std::map<std::string, std::shared_ptr<const ObjectStore>> stores;  // by folder
  std::vector<File> files;
  std::vector<std::string> names;
  std::vector<ShardInfo> objects;
  std::string folders;  // the files' one folder, or "" when they are in several
  for (size_t i = 0; i < urls.size(); ++i) {
    STOKER_ASSIGN_OR_RETURN(RemoteUrl url, parse_remote_url(urls[i]));
    const size_t slash = url.path.rfind('/');
    const std::string name = slash == std::string::npos ? url.path : url.path.substr(slash + 1);
    if (!has_suffix(name, suffix))
      return invalid_argument(url.redacted() + ": not a name ending in " + suffix);
    RemoteUrl folder = url;
    folder.path = slash == std::string::npos ? "" : url.path.substr(0, slash);
    std::shared_ptr<const ObjectStore>& store = stores[folder.normal()];
    if (!store) {
      STOKER_ASSIGN_OR_RETURN(store, store_of(folder));
    }
    folders = i == 0 || folders == folder.redacted() ? folder.redacted() : std::string();
    STOKER_ASSIGN_OR_RETURN(HttpResponse head, store->head(name));
    if (!head.size) return io_error(url.redacted() + ": the server gives no size for it");
    File file;
    file.store = store;
    file.etag = head.etag;
    file.identity.size = *head.size;
    file.identity.stamp = static_cast<int64_t>(xxh3_64(head.etag.data(), head.etag.size()));
    file.key = url.cache_key();
    const std::string identity = fmt::format("{}\n{}\n{}", url.normal(), head.etag, *head.size);
    ShardInfo object;
    object.file = name;
    object.bytes = *head.size;
    object.index_checksum = xxh3_64(identity.data(), identity.size());
    objects.push_back(std::move(object));
    names.push_back(url.redacted());
    files.push_back(std::move(file));
  }
  STOKER_ASSIGN_OR_RETURN(DatasetCache part,
                          cache->objects(folders.empty() ? location : folders, std::move(objects)));
  std::shared_ptr<RemoteFiles> opened(new RemoteFiles(std::move(cache), std::move(part)));
  opened->files_ = std::move(files);
  opened->names_ = std::move(names);
  opened->location_ = std::move(location);
  return std::shared_ptr<const RemoteFiles>(std::move(opened));
}

Result<OpenFile> RemoteFiles::open(size_t file) const {
  const File& f = files_[file];
  STOKER_ASSIGN_OR_RETURN(
      CachedShard copy,
      objects_.fetch(static_cast<int>(file), download_from(f.store, f.etag), EvictionAdvice()));
  auto held = std::make_shared<CachedShard>(std::move(copy));
  return OpenFile{held->fd(), f.identity, std::move(held)};
}

}  // namespace stoker::remote
