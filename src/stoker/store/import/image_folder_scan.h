#pragma once
// The listing of an ImageFolder: the classes and samples torchvision.datasets.ImageFolder(root)
// finds, in its order, so that record i of an import is ImageFolder's sample i.
//
// As torchvision (find_classes, make_dataset): the classes are root's subdirectories (symbolic
// links to directories included, hidden ones too), sorted; a class's index is its position.
// Each class folder is walked recursively following symbolic links (os.walk(followlinks=True));
// the directories met are sorted by path and each one's files by name, and a file is a sample
// if its name ends with one of kImageExtensions, in any case. Names sort as Python sorts str:
// by the code points os.fsdecode gives them (for UTF-8 names, byte order). A "file" is anything
// in a directory that is not a directory, as in os.walk: a FIFO or a dangling symbolic link
// named x.jpg is a sample, which the importer then finds bad; a directory named x.jpg is walked.
//
// Where stoker parts from torchvision: a class folder name that is not UTF-8 is refused (the
// manifest is JSON; torchvision takes it); a symbolic link that leads back to a directory it is
// inside (a loop, which os.walk follows until the path is too long, listing the same files
// dozens of times) and a directory that cannot be read (which os.walk skips silently) are
// listed as bad entries instead of being walked.

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// torchvision's IMG_EXTENSIONS (lower case; matched case-insensitively).
constexpr const char* kImageExtensions[] = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                            ".pgm", ".tif",  ".tiff", ".webp"};

// True if `name` ends with one of kImageExtensions, in any case.
bool has_image_extension(std::string_view name);

struct ImageFolderSample {
  std::string path;  // root/class/..., as os.path.join builds it
  int64_t label = 0;
};

// A path that cannot be imported, and why (one line, without the path).
struct BadEntry {
  std::string path;
  std::string reason;
};

// A directory the listing read, and its stamp (directory_stamp) from just before it was read:
// a directory whose entries change gets another stamp.
struct ListedDirectory {
  std::string path;
  std::string stamp;
};

struct ImageFolderListing {
  std::vector<std::string> classes;          // sorted class folder names; label = position
  std::vector<ImageFolderSample> samples;    // ImageFolder's order
  uint64_t ignored_files = 0;                // files in class folders without an image extension
  std::vector<BadEntry> bad;                 // symbolic link loops, unreadable directories
  std::vector<ListedDirectory> directories;  // root, then every directory walked
};

// A directory's identity and times (device, inode, mtime and ctime in ns) as one string.
std::string directory_stamp(const struct stat& st);

// Lists `root`. Errors (kNotFound / kInvalidArgument, one line naming the path): root missing or
// not a directory; no class folder; a class folder name that is not UTF-8 (its bytes escaped);
// classes without any file with an image extension (naming them, as torchvision's "Found no
// valid file for the classes ..."). Thread-safe: reads the file system only.
Result<ImageFolderListing> list_image_folder(const std::string& root);

}  // namespace stoker
