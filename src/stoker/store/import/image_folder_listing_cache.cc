#include "stoker/store/import/image_folder_listing_cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"
#include "stoker/util/saved_form.h"

namespace stoker {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'K', 'I', 'F', 'L', 'S', '1'};
constexpr uint64_t kMaxListingBytes = uint64_t{4} << 30;

// Whether every directory the listing read still has its stamp.
bool current(const ImageFolderListing& listing) {
  for (const ListedDirectory& dir : listing.directories) {
    struct stat st {};
    if (::stat(dir.path.c_str(), &st) != 0 || directory_stamp(st) != dir.stamp) return false;
  }
  return true;
}

}  // namespace

std::string encode_listing(const std::string& root, const ImageFolderListing& listing) {
  std::string body;
  put_text(body, root);
  put_u64(body, listing.ignored_files);
  put_u64(body, listing.directories.size());
  for (const ListedDirectory& dir : listing.directories) {
    put_text(body, dir.path);
    put_text(body, dir.stamp);
  }
  put_u64(body, listing.classes.size());
  for (const std::string& name : listing.classes) put_text(body, name);
  put_u64(body, listing.samples.size());
  for (const ImageFolderSample& sample : listing.samples) {
    put_u64(body, static_cast<uint64_t>(sample.label));
    put_text(body, sample.path);
  }
  return seal(kMagic, body);
}

Result<ImageFolderListing> decode_listing(ByteSpan bytes, const std::string& root) {
  const Status damaged = corrupt(fmt::format("{}: its saved listing is damaged", root));
  const std::optional<ByteSpan> body = unseal(bytes, kMagic);
  if (!body) return damaged;
  SavedReader in(*body);
  std::string saved_root;
  ImageFolderListing listing;
  uint64_t n = 0;
  if (!in.text(saved_root) || saved_root != root || !in.u64(listing.ignored_files) ||
      !in.count(n, 16))
    return damaged;
  listing.directories.resize(n);
  for (ListedDirectory& dir : listing.directories)
    if (!in.text(dir.path) || !in.text(dir.stamp)) return damaged;
  if (!in.count(n, 8)) return damaged;
  listing.classes.resize(n);
  for (std::string& name : listing.classes)
    if (!in.text(name)) return damaged;
  if (!in.count(n, 16)) return damaged;
  listing.samples.resize(n);
  for (ImageFolderSample& sample : listing.samples) {
    uint64_t label = 0;
    if (!in.u64(label) || label >= listing.classes.size() || !in.text(sample.path)) return damaged;
    sample.label = static_cast<int64_t>(label);
  }
  if (!in.done()) return damaged;
  return listing;
}

Result<ImageFolderListing> cached_class_folder_listing(const std::string& root,
                                                       const ClassFolderFiles& files,
                                                       const std::string& cache_dir) {
  if (cache_dir.empty()) return list_class_folder(root, files);
  const std::string extensions = fmt::format("{}", fmt::join(files.extensions, "\n"));
  const std::string file =
      cache_file_of(root, cache_dir, files.cache_folder,
                    fmt::format("{:016x}.listing", xxh3_64(extensions.data(), extensions.size())));
  if (Result<std::string> saved = read_file(file, kMaxListingBytes); saved.is_ok()) {
    Result<ImageFolderListing> listing = decode_listing(
        {reinterpret_cast<const uint8_t*>(saved.value().data()), saved.value().size()}, root);
    if (listing.is_ok() && current(listing.value())) return listing;
  }
  STOKER_ASSIGN_OR_RETURN(ImageFolderListing listing, list_class_folder(root, files));
  if (listing.bad.empty()) save_cache_file(file, encode_listing(root, listing));
  return listing;
}

}  // namespace stoker
