#include "stoker/access/remote_image_folder.h"

#include <fmt/format.h>

#include <map>
#include <unordered_map>

#include "stoker/access/remote_objects.h"
#include "stoker/util/ordered_map.h"

namespace stoker::remote {
namespace {

// The folder `url` names (its path without a trailing '/').
Result<RemoteUrl> folder_url(std::string url) {
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  return parse_remote_url(url);
}

// Asks the size and ETag of each of `files` that its listing gave no size, kRequestThreads at
// once. A file the HEAD fails for (or gives no size) keeps why in `unreadable`: its read fails
// with that, naming its URL and the server's answer (a bad record).
void head_unsized(std::vector<ListedFile>& files, const std::vector<size_t>& unsized) {
  throw_if_error(ordered_map<Result<HttpResponse>>(
      unsized.size(), kRequestThreads, 4 * kRequestThreads,
      [&](size_t i, int) {
        const ListedFile& file = files[unsized[i]];
        return file.store->head(file.name);
      },
      [&](size_t i, Result<HttpResponse> head) {
        ListedFile& file = files[unsized[i]];
        if (!head.is_ok()) {
          file.unreadable = head.status();
          return Status::ok();
        }
        if (!head.value().size) {
          file.unreadable = io_error(file.url.redacted() + ": the server gives no size for it");
          return Status::ok();
        }
        file.size = *head.value().size;
        file.etag = head.value().etag;
        file.version = head.value().etag;
        return Status::ok();
      }));
}

// The listings of the class folders `classes` of `store`'s folder, kRequestThreads at once.
std::map<std::string, Result<FolderEntries>> list_class_folders(
    const ObjectStore& store, const std::vector<std::string>& classes) {
  std::map<std::string, Result<FolderEntries>> listed;
  throw_if_error(ordered_map<Result<FolderEntries>>(
      classes.size(), kRequestThreads, 4 * kRequestThreads,
      [&](size_t i, int) { return store.list_entries(classes[i] + "/"); },
      [&](size_t i, Result<FolderEntries> entries) {
        listed.emplace(classes[i], std::move(entries));
        return Status::ok();
      }));
  return listed;
}

}  // namespace

Result<RemoteImageFolder> list_remote_image_folder(const std::string& url) {
  STOKER_ASSIGN_OR_RETURN(const RemoteUrl root, folder_url(url));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const ObjectStore> store, store_of(root));
  RemoteImageFolder folder;
  folder.location = root.redacted();
  STOKER_ASSIGN_OR_RETURN(FolderEntries top, store->list_entries(""));
  std::map<std::string, Result<FolderEntries>> classes = list_class_folders(*store, top.folders);
  // Paths in the walk: the location, then the names below it as listed (decoded), so that they
  // sort as the same folder's paths on disk; each file's listing by that path.
  const std::string prefix = folder.location + "/";
  std::unordered_map<std::string, ListedObject> listed;
  const ClassWalk walk = [&](const std::string& path, int64_t label,
                             ImageFolderListing& listing) -> Status {
    std::vector<WalkedFolder> walked;
    std::vector<std::pair<std::string, int>> pending = {{path.substr(prefix.size()), 0}};
    while (!pending.empty()) {
      const auto [relative, depth] = pending.back();
      pending.pop_back();
      if (depth > kMaxDepth)
        return invalid_argument(
            fmt::format("{}: folders nested deeper than {} below the class "
                        "folder; not listed",
                        store->describe(relative + "/"), kMaxDepth));
      const auto listed_class = classes.find(relative);
      STOKER_ASSIGN_OR_RETURN(FolderEntries entries, listed_class != classes.end()
                                                         ? std::move(listed_class->second)
                                                         : store->list_entries(relative + "/"));
      WalkedFolder here{prefix + relative, {}};
      for (ListedObject& file : entries.files) {
        if (!has_image_extension(file.name)) {
          ++listing.ignored_files;
          continue;
        }
        here.images.push_back(file.name);
        std::string key = here.path + "/" + file.name;
        listed.emplace(std::move(key), std::move(file));
      }
      walked.push_back(std::move(here));
      for (const std::string& sub : entries.folders)
        pending.push_back({relative + "/" + sub, depth + 1});
    }
    append_class_samples(std::move(walked), label, listing);
    return Status::ok();
  };
  STOKER_ASSIGN_OR_RETURN(folder.listing,
                          list_classes(folder.location, ImageFolderListing(), top.folders, walk));
  std::vector<size_t> unsized;
  for (ImageFolderSample& sample : folder.listing.samples) {
    const std::string relative = sample.path.substr(prefix.size());
    ListedObject& object = listed.at(sample.path);
    ListedFile file;
    file.store = store;
    file.name = relative;
    file.url = root;
    file.url.path = root.object_key(relative);
    file.etag = object.etag;
    file.version = object.etag.empty() ? object.mtime : object.etag;
    if (object.size) {
      file.size = *object.size;
    } else {
      unsized.push_back(folder.files.size());
    }
    sample.path = store->describe(relative);
    folder.files.push_back(std::move(file));
  }
  head_unsized(folder.files, unsized);
  return folder;
}

Result<bool> is_remote_image_folder(const std::string& url) {
  STOKER_ASSIGN_OR_RETURN(const RemoteUrl root, folder_url(url));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const ObjectStore> store, store_of(root));
  STOKER_ASSIGN_OR_RETURN(FolderEntries top, store->list_entries(""));
  for (const ListedObject& file : top.files)
    if (file.name == "manifest.json") return false;
  return !top.folders.empty();
}

}  // namespace stoker::remote
