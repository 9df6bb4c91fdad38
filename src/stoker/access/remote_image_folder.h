#pragma once
// The listing of an ImageFolder at an s3:// or http(s):// URL (torchvision's layout: ROOT/CLASS/
// ... /IMAGE.jpg), or of a class folder of other files (ClassFolderFiles: a video folder's), in
// the order torchvision.datasets.ImageFolder gives the same folder on disk
// (store/import/image_folder_scan.h's list_classes: the classes are the root's sub-folders,
// each walked folder by folder, sorted as Python sorts paths and names). A folder's entries
// come from its store's listing (ObjectStore::list_entries: S3's common prefixes and objects,
// an http(s):// folder's index page, HTML or nginx's JSON; the class folders' kRequestThreads at
// once); each sample's size and ETag as the
// listing gives them, else asked by HEAD, so that its file is read
// through the shard cache (access/remote_files.h's RemoteFiles::open_listed) without a request
// per file at open. A folder whose listing repeats that of a folder above it (a link looping
// back: a symlink to a parent, a server answering every path with one page) is not walked, nor
// is a folder already listed. Errors are one line naming the folder's redacted URL: a page or
// listing that cannot be read or parsed, no class folder, classes without images
// (list_classes'), a bound of ListingLimits passed. Thread-safe (a function).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stoker/access/remote_files.h"
#include "stoker/store/import/image_folder_scan.h"

namespace stoker::remote {

struct RemoteImageFolder {
  std::string location;           // the folder's redacted URL, without a trailing '/'
  ImageFolderListing listing;     // sample paths are the files' redacted URLs
  std::vector<ListedFile> files;  // sample i's file
};

// What a listing reads at most (an index page can link to sub-folders without end).
struct ListingLimits {
  int depth = 64;              // folders below a class folder
  int64_t folders = 100'000;   // folders listed (index pages, S3 listings), the root's included
  int64_t files = 10'000'000;  // files listed, images or not
};
// An image folder's files are kept in the cache in groups of consecutive files of at most these
// (RemoteFilesOptions::group_files, group_bytes): a group is one admission into the cache for
// many small files, each still GETted alone (measured: docs/BENCHMARKS.md).
inline constexpr int kGroupFiles = 32;
inline constexpr uint64_t kGroupBytes = uint64_t{4} << 20;
// Listings of class folders, and HEADs of files whose listing gives no size, at once.
inline constexpr int kRequestThreads = 8;

// The image folder at `url` (a trailing '/' or not), its samples `files` (a video folder's:
// store/import/video_folder_source.h's video_files). `cancelled` (may be empty; polled from
// several threads) turning true ends the listing: kCancelled.
Result<RemoteImageFolder> list_remote_image_folder(const std::string& url,
                                                   const std::function<bool()>& cancelled = nullptr,
                                                   const ListingLimits& limits = {},
                                                   const ClassFolderFiles& files = image_files());

// Whether `url` names a folder of sub-folders and no manifest.json (what `auto` opens as an
// image folder): its listing has a sub-folder. The listing's errors; kCancelled as above.
Result<bool> is_remote_image_folder(const std::string& url,
                                    const std::function<bool()>& cancelled = nullptr);

}  // namespace stoker::remote
