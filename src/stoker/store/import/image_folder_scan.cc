#include "stoker/store/import/image_folder_scan.h"

#include <dirent.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "stoker/util/saved_form.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

// Class names an error message lists before "and N more".
constexpr size_t kScanNamesInMessage = 10;

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

using FileId = std::pair<dev_t, ino_t>;

struct Entries {
  std::vector<std::string> dirs;   // names of entries that are directories (links followed)
  std::vector<FileId> dir_ids;     // and what they are
  std::vector<std::string> files;  // names of everything else
  ListedDirectory self;            // the directory, as it was before it was read
};

// The entries of directory `path` as os.scandir + DirEntry.is_dir() sort them: a symbolic link
// to a directory is a directory; anything stat() cannot follow is not.
Result<Entries> read_entries(const std::string& path) {
  std::unique_ptr<DIR, DirCloser> dir(::opendir(path.c_str()));
  if (!dir) return io_error(std::string("cannot read the directory: ") + std::strerror(errno));
  Entries entries;
  struct stat self {};
  if (::fstat(::dirfd(dir.get()), &self) != 0)
    return io_error(std::string("cannot stat the directory: ") + std::strerror(errno));
  entries.self = {path, directory_stamp(self)};
  errno = 0;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::stat((path + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      entries.dirs.push_back(name);
      entries.dir_ids.emplace_back(st.st_dev, st.st_ino);
    } else {
      entries.files.push_back(name);
    }
    errno = 0;
  }
  if (errno != 0)
    return io_error(std::string("cannot read the directory: ") + std::strerror(errno));
  return entries;
}

struct Directory {
  std::string path;
  // The directories it is inside, itself included: a link to one of them is a loop.
  std::vector<FileId> ancestors;
};

// Walks class folder `top` as os.walk(top, followlinks=True) and adds its samples (label
// `label`; the files with one of `extensions`), in make_dataset's order, to `listing`.
void walk_class(const std::string& top, int64_t label, const std::vector<std::string>& extensions,
                ImageFolderListing& listing) {
  std::vector<WalkedFolder> found;
  std::vector<Directory> pending;
  struct stat st {};
  if (::stat(top.c_str(), &st) == 0) pending.push_back({top, {{st.st_dev, st.st_ino}}});
  while (!pending.empty()) {
    Directory dir = std::move(pending.back());
    pending.pop_back();
    Result<Entries> entries = read_entries(dir.path);
    if (!entries.is_ok()) {
      listing.bad.push_back({dir.path, entries.status().message()});
      continue;
    }
    listing.directories.push_back(entries.value().self);
    WalkedFolder here{dir.path, {}};
    for (std::string& name : entries.value().files) {
      if (has_extension(name, extensions)) {
        here.samples.push_back(std::move(name));
      } else {
        ++listing.ignored_files;
      }
    }
    found.push_back(std::move(here));
    for (size_t i = 0; i < entries.value().dirs.size(); ++i) {
      Directory sub{dir.path + "/" + entries.value().dirs[i], dir.ancestors};
      const FileId id = entries.value().dir_ids[i];
      if (std::find(dir.ancestors.begin(), dir.ancestors.end(), id) != dir.ancestors.end()) {
        listing.bad.push_back(
            {sub.path, "a symbolic link loop: leads back to a directory it is inside"});
        continue;
      }
      sub.ancestors.push_back(id);
      pending.push_back(std::move(sub));
    }
  }
  append_class_samples(std::move(found), label, listing);
}

}  // namespace

void sort_as_python(std::vector<std::string>& names) {
  std::vector<std::pair<std::u32string, std::string>> keyed;
  keyed.reserve(names.size());
  for (std::string& name : names) keyed.emplace_back(fsdecode_code_points(name), std::move(name));
  std::sort(keyed.begin(), keyed.end());
  for (size_t i = 0; i < keyed.size(); ++i) names[i] = std::move(keyed[i].second);
}

void append_class_samples(std::vector<WalkedFolder> walked, int64_t label,
                          ImageFolderListing& listing) {
  std::vector<std::pair<std::u32string, WalkedFolder*>> keyed;  // by path, as Python sorts it
  for (WalkedFolder& folder : walked)
    keyed.emplace_back(fsdecode_code_points(folder.path), &folder);
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [key, folder] : keyed) {
    sort_as_python(folder->samples);
    for (const std::string& name : folder->samples)
      listing.samples.push_back({folder->path + "/" + name, label});
  }
}

const ClassFolderFiles& image_files() {
  static const ClassFolderFiles files{
      std::vector<std::string>(std::begin(kImageExtensions), std::end(kImageExtensions)),
      "an image extension", "an ImageFolder", kImageFolderListingFolder};
  return files;
}

bool has_image_extension(std::string_view name) {
  return has_extension(name, image_files().extensions);
}

bool has_extension(std::string_view name, const std::vector<std::string>& extensions) {
  for (std::string_view extension : extensions) {
    if (name.size() < extension.size()) continue;
    const std::string_view tail = name.substr(name.size() - extension.size());
    if (std::equal(tail.begin(), tail.end(), extension.begin(), [](char a, char b) {
          return (a >= 'A' && a <= 'Z' ? static_cast<char>(a - 'A' + 'a') : a) == b;
        }))
      return true;
  }
  return false;
}

std::string directory_stamp(const struct stat& st) {
  return fmt::format("{}:{}:{}.{:09}:{}.{:09}", st.st_dev, st.st_ino, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
}

Result<ImageFolderListing> list_image_folder(const std::string& root) {
  return list_class_folder(root, image_files());
}

Result<ImageFolderListing> list_class_folder(const std::string& root,
                                             const ClassFolderFiles& files) {
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) {
    if (errno == ENOENT) return not_found(printable(root) + ": no such directory");
    return io_error(printable(root) + ": cannot stat: " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return invalid_argument(printable(root) + ": not a directory");
  Result<Entries> entries = read_entries(root);
  if (!entries.is_ok()) return io_error(printable(root) + ": " + entries.status().message());
  ImageFolderListing listing;
  listing.directories.push_back(entries.value().self);
  return list_classes(root, std::move(listing), std::move(entries.value().dirs), files,
                      [&files](const std::string& top, int64_t label, ImageFolderListing& listing) {
                        walk_class(top, label, files.extensions, listing);
                        return Status::ok();
                      });
}

Result<ImageFolderListing> list_classes(const std::string& root, ImageFolderListing listing,
                                        std::vector<std::string> classes,
                                        const ClassFolderFiles& files,
                                        const ClassWalk& walk_class) {
  listing.classes = std::move(classes);
  if (listing.classes.empty())
    return invalid_argument(fmt::format("{}: no class folders ({} holds one folder per class)",
                                        printable(root), files.folder_name));
  for (const std::string& name : listing.classes) {
    if (!is_valid_utf8(name))
      return invalid_argument(
          fmt::format("{}: class folder name {} is not UTF-8 (class names are stored as JSON text)",
                      printable(root), printable(name)));
  }
  sort_as_python(listing.classes);
  // os.path.join(root, class): no second separator after one root already ends with.
  const std::string prefix = root.back() == '/' ? root : root + "/";
  std::vector<std::string> empty;
  for (size_t label = 0; label < listing.classes.size(); ++label) {
    const size_t before = listing.samples.size();
    STOKER_RETURN_IF_ERROR(
        walk_class(prefix + listing.classes[label], static_cast<int64_t>(label), listing));
    if (listing.samples.size() == before) empty.push_back(listing.classes[label]);
  }
  if (!empty.empty()) {
    return invalid_argument(
        fmt::format("{}: found no file with {} ({}) for the class{} {}", printable(root),
                    files.extension_name, fmt::join(files.extensions, " "),
                    empty.size() == 1 ? "" : "es", printable_list(empty, kScanNamesInMessage)));
  }
  return listing;
}

}  // namespace stoker
