#pragma once
// The listing of an ImageFolder: the classes and samples torchvision.datasets.ImageFolder(root)
// finds, in its order, so that record i of an import is ImageFolder's sample i; and of any class
// folder whose samples are files of other extensions (ClassFolderFiles: torchvision's video
// datasets, Kinetics, UCF101 and HMDB51, make_dataset(root, class_to_idx, extensions)).
//
// As torchvision (find_classes, make_dataset): the classes are root's subdirectories (symbolic
// links to directories included, hidden ones too), sorted; a class's index is its position.
// Each class folder is walked recursively following symbolic links (os.walk(followlinks=True));
// the directories met are sorted by path and each one's files by name, and a file is a sample
// if its name ends with one of kImageExtensions (ClassFolderFiles::extensions), in any case.
// Names sort as Python sorts str: by the code points os.fsdecode gives them (for UTF-8 names,
// byte order). A "file" is anything in a directory that is not a directory, as in os.walk: a
// FIFO or a dangling symbolic link named x.jpg is a sample, which the importer then finds bad;
// a directory named x.jpg is walked.
//
// Where stoker parts from torchvision: a class folder name that is not UTF-8 is refused (the
// manifest is JSON; torchvision takes it); a symbolic link that leads back to a directory it is
// inside (a loop, which os.walk follows until the path is too long, listing the same files
// dozens of times) and a directory that cannot be read (which os.walk skips silently) are
// listed as bad entries instead of being walked.

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// torchvision's IMG_EXTENSIONS (lower case; matched case-insensitively).
constexpr const char* kImageExtensions[] = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                            ".pgm", ".tif",  ".tiff", ".webp"};

// What a class folder's samples are, and what its errors call them.
struct ClassFolderFiles {
  // A file is a sample if its name, in lower case, ends with one of these (as torchvision's
  // has_file_allowed_extension: "avi" without a dot also takes "xavi"; an upper-case one none).
  std::vector<std::string> extensions;
  std::string extension_name;  // "an image extension"
  std::string folder_name;     // "an ImageFolder"
  std::string cache_folder;    // where listings are cached (image_folder_listing_cache.h)
};

// An ImageFolder's: kImageExtensions.
const ClassFolderFiles& image_files();

// True if `name`, in lower case (ASCII letters), ends with one of `extensions`.
bool has_extension(std::string_view name, const std::vector<std::string>& extensions);
// has_extension with kImageExtensions.
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
  uint64_t ignored_files = 0;                // files in class folders without a sample's extension
  std::vector<BadEntry> bad;                 // symbolic link loops, unreadable directories
  std::vector<ListedDirectory> directories;  // root, then every directory walked
};

// A directory's identity and times (device, inode, mtime and ctime in ns) as one string.
std::string directory_stamp(const struct stat& st);

// Lists `root`, its samples `files`. Errors (kNotFound / kInvalidArgument, one line naming the
// path): root missing or not a directory; no class folder; a class folder name that is not UTF-8
// (its bytes escaped); classes without any sample file (naming them, as torchvision's "Found no
// valid file for the classes ..."). Thread-safe: reads the file system only.
Result<ImageFolderListing> list_class_folder(const std::string& root,
                                             const ClassFolderFiles& files);
// list_class_folder(root, image_files()).
Result<ImageFolderListing> list_image_folder(const std::string& root);

// The parts of list_image_folder that a listing of another kind of folder shares (a remote one:
// access/remote_image_folder.h), so that its classes and samples are in the same order.

// Sorts `names` as Python's sorted() sorts the str os.fsdecode makes of them.
void sort_as_python(std::vector<std::string>& names);

// A folder a class's walk met, and the names of its sample files.
struct WalkedFolder {
  std::string path;
  std::vector<std::string> samples;
};

// Appends the samples of one class's walk, `walked` (its folders in any order), with `label` to
// `listing`, in make_dataset's order: folders by path, then files by name, as Python sorts them.
void append_class_samples(std::vector<WalkedFolder> walked, int64_t label,
                          ImageFolderListing& listing);

// Walks the class folder at `path` (root/class) as label `label`, adding its samples to the
// listing (append_class_samples); an error ends the listing.
using ClassWalk =
    std::function<Status(const std::string& path, int64_t label, ImageFolderListing& listing)>;

// `listing` (what was read of `root` already) with the class folders `classes` (in any order)
// checked, sorted and each walked by `walk_class`, and the errors of list_class_folder: no class
// folder, a name that is not UTF-8, classes without any of `files`.
Result<ImageFolderListing> list_classes(const std::string& root, ImageFolderListing listing,
                                        std::vector<std::string> classes,
                                        const ClassFolderFiles& files, const ClassWalk& walk_class);

}  // namespace stoker
