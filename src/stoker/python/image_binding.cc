#include "stoker/python/image_binding.h"

#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/image/image_header.h"
#include "stoker/store/image_record.h"
#include "stoker/util/checksum.h"

namespace stoker::python {
namespace py = pybind11;

namespace {

// The image record's fields as (name, dtype, shape) tuples, the writer's form.
std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> image_record_fields() {
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> fields;
  const Schema schema = image_record_schema();
  for (const Field& f : schema.fields()) fields.emplace_back(f.name, dtype_name(f.dtype), f.shape);
  return fields;
}

// {"format", "width", "height", "checksum"} of the JPEG or PNG in `data`; with `check`, the
// whole image is decoded too, as the importer checks every image it stores. Raises stoker.Error
// (one line) on anything else.
py::dict image_info(const py::buffer& data, bool check) {
  const py::buffer_info buffer = data.request();
  if (buffer.ndim > 1 || (buffer.ndim == 1 && buffer.strides[0] != buffer.itemsize))
    throw py::value_error("an encoded image is one contiguous run of bytes");
  const ByteSpan bytes{static_cast<const uint8_t*>(buffer.ptr),
                       static_cast<size_t>(buffer.size * buffer.itemsize)};
  Result<image::ImageHeader> header = invalid_argument("unread");
  Status decoded;
  uint64_t checksum = 0;
  {
    py::gil_scoped_release no_gil;
    header = image::read_image_header(bytes);
    if (header.is_ok() && check) {
      image::DecodeBuffer scratch;
      decoded = image::decode_rgb(bytes, image::DecodeRequest{}, scratch).status();
    }
    checksum = xxh3_64(bytes.data, bytes.size);
  }
  throw_if_error(header.status());
  throw_if_error(decoded);
  py::dict info;
  info["format"] = image::format_name(header.value().format);
  info["width"] = header.value().width;
  info["height"] = header.value().height;
  // As the importer stores it: the 64 bits of XXH3-64 as an int64.
  info["checksum"] = static_cast<int64_t>(checksum);
  return info;
}

}  // namespace

void register_image(py::module_& module) {
  module.def("image_record_fields", &image_record_fields,
             "The fields of an image dataset's records, as (name, dtype, shape) tuples.");
  module.def("image_info", &image_info, py::arg("data"), py::arg("check") = true,
             "Format, width, height and XXH3-64 checksum of an encoded JPEG or PNG; with "
             "`check`, decodes it whole first. Raises stoker.Error if it is not a good image.");
}

}  // namespace stoker::python
