// The extension module stoker._stoker. Each part of the binding registers itself here; the
// Python package (python/stoker) builds the user-facing API on top.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "stoker/python/errors.h"
#include "stoker/python/image_binding.h"
#include "stoker/python/loader_binding.h"
#include "stoker/python/op_binding.h"
#include "stoker/python/sampler_binding.h"
#include "stoker/python/tools_binding.h"
#include "stoker/python/video_binding.h"
#include "stoker/python/writer_binding.h"
#include "stoker/store/manifest.h"
#include "stoker/util/mapped_read_guard.h"

namespace py = pybind11;

PYBIND11_MODULE(_stoker, module) {
  module.doc() = "stoker's native core: the loader, the dataset writer and the importers.";
  module.attr("__version__") = STOKER_VERSION;
  module.attr("dataset_format_version") = stoker::kDatasetFormatVersion;
  // A shard truncated under a running Loader: stoker.Error naming it instead of SIGBUS ending the
  // interpreter (mapped_read_guard.h; chained to any SIGBUS handler installed before, such as
  // faulthandler's).
  stoker::install_mapped_read_fault_handler();
  module.attr("DTYPES") = pybind11::tuple(pybind11::cast(stoker::kDTypeNames.names()));
  stoker::python::register_errors(module);
  stoker::python::register_loader(module);
  stoker::python::register_operations(module);
  stoker::python::register_sampler(module);
  stoker::python::register_writer(module);
  stoker::python::register_image(module);
  stoker::python::register_tools(module);
  // Whether the video layer is built (cmake/StokerVideo.cmake): stoker/_video.py refuses video
  // in one line where it is not.
  module.attr("with_video") = bool{STOKER_WITH_VIDEO};
  // Whether Parquet and Arrow are read (cmake/StokerParquet.cmake): where not, their sources
  // refuse in one line.
  module.attr("with_parquet") = bool{STOKER_WITH_PARQUET};
#if STOKER_WITH_VIDEO
  stoker::python::register_video(module);
#endif
}
