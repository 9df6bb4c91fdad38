#pragma once
// The listing of a class folder kept between runs: list_class_folder(root, files) saved under
// CACHE_DIR/FILES.cache_folder/ (image-folders/ for an ImageFolder; one file per root and
// extensions, named by the XXH3-64 of the root's absolute path and of the extensions), with the
// stamp of every directory it read (image_folder_scan.h). A later open whose root's
// directories all have the same stamps reads the listing from there (a few thousand stat
// calls instead of one per file); any other file (missing, stale, of another root, damaged)
// is listed again and replaced. A listing with bad entries (loops, unreadable directories) is
// not kept. The saved file is the cache's: the folder itself is never written. Functions;
// thread-safe (the file is replaced atomically).

#include <string>

#include "stoker/store/import/image_folder_scan.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker {

// The listing of `root`, from `cache_dir`'s copy when it is current, else list_class_folder's
// (its errors), then saved there. `cache_dir` "": list_class_folder(root, files). A cache that
// cannot be written is passed over silently: the listing stands.
Result<ImageFolderListing> cached_class_folder_listing(const std::string& root,
                                                       const ClassFolderFiles& files,
                                                       const std::string& cache_dir);

// The saved form of `listing` of `root`, and back: decode_listing is kCorrupt for bytes that are
// not a whole listing of `root` (a parser of the cache's bytes: fuzz/).
std::string encode_listing(const std::string& root, const ImageFolderListing& listing);
Result<ImageFolderListing> decode_listing(ByteSpan bytes, const std::string& root);

}  // namespace stoker
