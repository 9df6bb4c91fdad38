// An image folder read in place (store/import/image_folder_source.h), torchvision's ImageFolder
// classes and order: local, its listing kept in the cache folder, or at a URL whose pages list
// it (access/remote_image_folder.h), its files fetched ahead through the shard cache in groups.

#include "stoker/access/remote_image_folder.h"
#include "stoker/access/remote_objects.h"
#include "stoker/access/source_opening.h"
#include "stoker/access/source_registry.h"
#include "stoker/net/object_store.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/data_location.h"
#include "stoker/store/import/image_folder_source.h"

namespace stoker::sources {
namespace {

using namespace remote;  // the access and net layers' names

Result<std::shared_ptr<const Dataset>> open_remote_image_folder(const SourceOpening& opening) {
  return open_remote_class_folder(
      opening, image_files(),
      [](std::string location, ImageFolderListing listing,
         std::shared_ptr<const InPlaceFiles> files,
         const ClassFolderSourceOptions& options) -> Result<std::shared_ptr<ClassFolderSource>> {
        ImageFolderSourceOptions image_options;
        static_cast<ClassFolderSourceOptions&>(image_options) = options;
        STOKER_ASSIGN_OR_RETURN(
            std::shared_ptr<ImageFolderSource> source,
            ImageFolderSource::open_listed(std::move(location), std::move(listing),
                                           std::move(files), image_options));
        return std::shared_ptr<ClassFolderSource>(std::move(source));
      });
}

Result<std::shared_ptr<const Dataset>> open_image_folder(const SourceOpening& opening) {
  if (is_remote_url(opening.location)) return open_remote_image_folder(opening);
  ImageFolderSourceOptions options;
  if (Result<std::string> dir = cache_dir_of(*opening.access); dir.is_ok())
    options.listing_cache_dir = dir.value();
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ImageFolderSource> source,
                          ImageFolderSource::open(opening.location, options));
  return open_in_place(std::move(source), *opening.access);
}

// A local image folder (is_image_folder), or a folder URL (ending in '/') with no
// dataset's manifest whose listing holds folders.
bool is_image_folder_at(const std::string& location, const std::function<bool()>& cancelled) {
  if (!is_remote_url(location)) return is_image_folder(location);
  if (location.back() != '/') return false;
  Result<RemoteUrl> url = parse_remote_url(location);
  if (!url.is_ok()) return false;
  Result<std::shared_ptr<const ObjectStore>> store = store_of(url.value());
  if (!store.is_ok()) return false;
  Result<bool> dataset = exists(*store.value(), kManifestName);
  if (!dataset.is_ok() || dataset.value()) return false;
  Result<bool> folder = is_remote_image_folder(location, cancelled);
  return folder.is_ok() && folder.value();
}

}  // namespace

SourceSpec image_folder() {
  SourceSpec spec;
  spec.name = "imagefolder";
  spec.doc =
      "a folder of class folders of images (torchvision's ImageFolder: its classes and order), "
      "read in place; or a URL whose pages list one";
  spec.auto_rank = 30;
  spec.recognises = is_image_folder_at;
  spec.open = open_image_folder;
  return spec;
}

}  // namespace stoker::sources
