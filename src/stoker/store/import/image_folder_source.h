#pragma once
// ImageFolderSource: an ImageFolder (torchvision's layout, image_folder_scan.h) read in place, as
// a class folder source (class_folder_source.h: its units, listing cache, remote files and bad
// files) of the image dataset's layout (store/image_record.h), so that the loader and every
// operation read it as they read a converted dataset. Record i is ImageFolder(root).samples[i]:
// the file's bytes as they are (a JPEG is not transcoded: the same pixels as the converted
// dataset, but a crop decodes the whole rows above it), its class index, the size its header
// gives, the file's size and XXH3-64. A file that is not a JPEG or PNG stoker decodes gives a
// record whose image is empty, a bad record. Thread-safe.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/image/image_header.h"
#include "stoker/store/import/class_folder_source.h"

namespace stoker {

struct ImageFolderSourceOptions : ClassFolderSourceOptions {
  int64_t max_pixels = image::kDefaultMaxPixels;  // larger images are bad records
};

class ImageFolderSource : public ClassFolderSource {
 public:
  // Lists `root` (list_image_folder's errors) and lays its samples out in units.
  static Result<std::shared_ptr<ImageFolderSource>> open(const std::string& root,
                                                         const ImageFolderSourceOptions& options);

  // The folder `location` as `listing` lists it, sample i's file being `files`' file i.
  static Result<std::shared_ptr<ImageFolderSource>> open_listed(
      std::string location, ImageFolderListing listing, std::shared_ptr<const InPlaceFiles> files,
      const ImageFolderSourceOptions& options);

  std::string describe() const override;

 private:
  explicit ImageFolderSource(int64_t max_pixels);
  std::vector<uint8_t> make_record(int64_t label, const std::string* file,
                                   std::string& bad) const override;

  int64_t max_pixels_;
};

}  // namespace stoker
