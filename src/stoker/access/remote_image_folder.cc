#include "stoker/access/remote_image_folder.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>

#include "stoker/access/remote_objects.h"
#include "stoker/util/checksum.h"
#include "stoker/util/ordered_map.h"

namespace stoker::remote {
namespace {

// The folder `url` names (its path without a trailing '/').
Result<RemoteUrl> folder_url(std::string url) {
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  return parse_remote_url(url);
}

Status cancelled_listing(const std::string& location) {
  return Status(StatusCode::kCancelled, location + "/: listing cancelled");
}

// What a folder's listing says, as one number: two folders listing the same names (and sizes,
// ETags, times) have the same.
uint64_t listing_digest(const FolderEntries& entries) {
  std::string text;
  for (const ListedObject& f : entries.files) {
    text += fmt::format("f{}:{}|{}|{}|{}\n", f.name.size(), f.name, f.size ? *f.size : ~uint64_t{0},
                        f.etag, f.mtime);
  }
  for (const std::string& folder : entries.folders)
    text += fmt::format("d{}:{}\n", folder.size(), folder);
  return xxh3_64(text.data(), text.size());
}

// Asks the size and ETag of each of `files` that its listing gave no size, kRequestThreads at
// once. A file the HEAD fails for (or gives no size) keeps why in `unreadable`: its read fails
// with that, naming its URL and the server's answer (a bad record). kCancelled as the listing's.
Status head_unsized(std::vector<ListedFile>& files, const std::vector<size_t>& unsized,
                    const std::function<bool()>& cancelled, const std::string& location) {
  return ordered_map<Result<HttpResponse>>(
      unsized.size(), kRequestThreads, 4 * kRequestThreads,
      [&](size_t i, int) -> Result<HttpResponse> {
        if (cancelled && cancelled()) return cancelled_listing(location);
        const ListedFile& file = files[unsized[i]];
        return file.store->head(file.name, cancelled);
      },
      [&](size_t i, Result<HttpResponse> head) {
        ListedFile& file = files[unsized[i]];
        if (head.status().code() == StatusCode::kCancelled) return head.status();
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
      });
}

// Class folders' listings, by name.
using ClassListings = std::map<std::string, Result<FolderEntries>>;

// The listings of the class folders `classes` of `store`'s folder, kRequestThreads at once;
// kCancelled as the listing's.
Result<ClassListings> list_class_folders(const ObjectStore& store,
                                         const std::vector<std::string>& classes,
                                         const std::function<bool()>& cancelled,
                                         const std::string& location) {
  ClassListings listed;
  STOKER_RETURN_IF_ERROR(ordered_map<Result<FolderEntries>>(
      classes.size(), kRequestThreads, 4 * kRequestThreads,
      [&](size_t i, int) -> Result<FolderEntries> {
        if (cancelled && cancelled()) return cancelled_listing(location);
        return store.list_entries(classes[i] + "/", cancelled);
      },
      [&](size_t i, Result<FolderEntries> entries) {
        if (entries.status().code() == StatusCode::kCancelled) return entries.status();
        listed.emplace(classes[i], std::move(entries));
        return Status::ok();
      }));
  return listed;
}

// Counts what a listing has read against its limits.
class ListingBounds {
 public:
  ListingBounds(const ListingLimits& limits, const ObjectStore& store)
      : limits_(limits), store_(store) {}
  // Counts `folders` more listings, of `relative` ("" for the root) and those beside it.
  Status count_folders(const std::string& relative, int64_t folders) {
    folders_ += folders;
    if (folders_ <= limits_.folders) return Status::ok();
    return invalid_argument(fmt::format(
        "{}: more than {} folders to list (index pages linking to folders without end?); not "
        "listed further",
        where(relative), limits_.folders));
  }
  // Counts the files of `relative`'s listing `entries`.
  Status count_files(const std::string& relative, const FolderEntries& entries) {
    files_ += static_cast<int64_t>(entries.files.size());
    if (files_ <= limits_.files) return Status::ok();
    return invalid_argument(fmt::format("{}: more than {} files listed; not listed further",
                                        where(relative), limits_.files));
  }
  // Whether `relative`, `depth` folders below its class folder, may be listed.
  Status check_depth(const std::string& relative, int depth) const {
    if (depth <= limits_.depth) return Status::ok();
    return invalid_argument(
        fmt::format("{}: folders nested deeper than {} below the class folder; not listed",
                    where(relative), limits_.depth));
  }

 private:
  std::string where(const std::string& relative) const {
    return store_.describe(relative.empty() ? "" : relative + "/");
  }
  const ListingLimits limits_;
  const ObjectStore& store_;
  int64_t folders_ = 0;
  int64_t files_ = 0;
};

}  // namespace

Result<RemoteImageFolder> list_remote_image_folder(const std::string& url,
                                                   const std::function<bool()>& cancelled,
                                                   const ListingLimits& limits,
                                                   const ClassFolderFiles& files) {
  STOKER_ASSIGN_OR_RETURN(const RemoteUrl root, folder_url(url));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const ObjectStore> store, store_of(root));
  RemoteImageFolder folder;
  folder.location = root.redacted();
  ListingBounds bounds(limits, *store);
  STOKER_RETURN_IF_ERROR(bounds.count_folders("", 1));
  STOKER_ASSIGN_OR_RETURN(FolderEntries top, store->list_entries("", cancelled));
  STOKER_RETURN_IF_ERROR(bounds.count_files("", top));
  STOKER_RETURN_IF_ERROR(bounds.count_folders("", static_cast<int64_t>(top.folders.size())));
  STOKER_ASSIGN_OR_RETURN(ClassListings classes,
                          list_class_folders(*store, top.folders, cancelled, folder.location));
  const uint64_t top_digest = listing_digest(top);
  std::set<std::string> walked_paths;  // relative paths listed, to list none twice
  // Paths in the walk: the location, then the names below it as listed (decoded), so that they
  // sort as the same folder's paths on disk; each file's listing by that path.
  const std::string prefix = folder.location + "/";
  std::unordered_map<std::string, ListedObject> listed;
  const ClassWalk walk = [&](const std::string& path, int64_t label,
                             ImageFolderListing& listing) -> Status {
    std::vector<WalkedFolder> walked;
    // A folder to list, and the digests of the listings above it (the root's first).
    struct Pending {
      std::string relative;
      int depth = 0;
      std::vector<uint64_t> above;
    };
    std::vector<Pending> pending = {{path.substr(prefix.size()), 0, {top_digest}}};
    while (!pending.empty()) {
      Pending next = std::move(pending.back());
      pending.pop_back();
      const std::string& relative = next.relative;
      if (cancelled && cancelled()) return cancelled_listing(folder.location);
      STOKER_RETURN_IF_ERROR(bounds.check_depth(relative, next.depth));
      if (!walked_paths.insert(relative).second) continue;  // a name decoding to a path listed
      const auto listed_class = classes.find(relative);
      Result<FolderEntries> listed_here = FolderEntries();
      if (listed_class != classes.end()) {
        listed_here = std::move(listed_class->second);
      } else {
        STOKER_RETURN_IF_ERROR(bounds.count_folders(relative, 1));
        listed_here = store->list_entries(relative + "/", cancelled);
      }
      STOKER_ASSIGN_OR_RETURN(FolderEntries entries, std::move(listed_here));
      const uint64_t digest = listing_digest(entries);
      if (std::find(next.above.begin(), next.above.end(), digest) != next.above.end())
        continue;  // a link looping back: what a folder above lists
      STOKER_RETURN_IF_ERROR(bounds.count_files(relative, entries));
      WalkedFolder here{prefix + relative, {}};
      for (ListedObject& file : entries.files) {
        if (!has_extension(file.name, files.extensions)) {
          ++listing.ignored_files;
          continue;
        }
        here.samples.push_back(file.name);
        std::string key = here.path + "/" + file.name;
        listed.emplace(std::move(key), std::move(file));
      }
      walked.push_back(std::move(here));
      next.above.push_back(digest);
      for (const std::string& sub : entries.folders)
        pending.push_back({relative + "/" + sub, next.depth + 1, next.above});
    }
    append_class_samples(std::move(walked), label, listing);
    return Status::ok();
  };
  STOKER_ASSIGN_OR_RETURN(folder.listing, list_classes(folder.location, ImageFolderListing(),
                                                       top.folders, files, walk));
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
  STOKER_RETURN_IF_ERROR(head_unsized(folder.files, unsized, cancelled, folder.location));
  return folder;
}

Result<bool> is_remote_image_folder(const std::string& url,
                                    const std::function<bool()>& cancelled) {
  STOKER_ASSIGN_OR_RETURN(const RemoteUrl root, folder_url(url));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const ObjectStore> store, store_of(root));
  STOKER_ASSIGN_OR_RETURN(FolderEntries top, store->list_entries("", cancelled));
  for (const ListedObject& file : top.files)
    if (file.name == "manifest.json") return false;
  return !top.folders.empty();
}

}  // namespace stoker::remote
