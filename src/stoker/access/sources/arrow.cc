// Arrow IPC files read in place (store/import/arrow_source.h): Hugging Face datasets' cache
// files, local.

#include "stoker/access/source_opening.h"
#include "stoker/access/source_registry.h"
#include "stoker/net/remote_url.h"
#include "stoker/store/import/arrow_source.h"
#include "stoker/store/import/data_files.h"

namespace stoker::sources {
namespace {

using namespace remote;  // the access and net layers' names

Result<std::shared_ptr<const Dataset>> open_arrow([[maybe_unused]] const SourceOpening& opening) {
  if (is_remote_url(opening.location))
    return unsupported(shown_location(opening.location) +
                       ": Arrow files are read locally only (a URL: convert it, or use Parquet)");
#if STOKER_WITH_PARQUET
  ArrowSourceOptions options;
  options.image_column = opening.params.text("image_column");
  options.label_column = opening.params.text("label_column");
  options.relative_to = opening.params.text("relative_to");
  const std::string pil = opening.params.choice("pil_decode");
  options.pil = pil == "rgb" ? PilDecode::kRgb : pil == "own" ? PilDecode::kOwn : PilDecode::kNone;
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<ArrowSource> source,
                          ArrowSource::open(opening.location, options));
  return open_in_place(std::move(source), *opening.access);
#else
  return unsupported(opening.location +
                     ": this stoker was built without Arrow (STOKER_WITH_PARQUET)");
#endif
}

}  // namespace

SourceSpec arrow() {
  SourceSpec spec;
  spec.name = "arrow";
  spec.doc =
      "Arrow IPC files (a file, a folder, a glob: Hugging Face datasets' cache files), an image "
      "column and a label column, read in place";
  spec.params = image_table_params();
  spec.params.insert(
      spec.params.end(),
      {ParamSpec::text("relative_to", "",
                       "the folder of images' relative paths (null bytes): \"\", each file's"),
       ParamSpec::choice("pil_decode", "none", {"none", "rgb", "own"},
                         "images Hugging Face's Image feature decodes otherwise (PIL) are bad "
                         "records: rgb, Image(mode=\"RGB\")'s (an EXIF orientation); own, "
                         "Image()'s (also a mode other than RGB); none: no check")});
  spec.auto_rank = 15;
  spec.recognises = [](const std::string& location, const std::function<bool()>&) {
    return !is_remote_url(location) && is_data_path(location, ".arrow");
  };
  spec.open = open_arrow;
  return spec;
}

}  // namespace stoker::sources
