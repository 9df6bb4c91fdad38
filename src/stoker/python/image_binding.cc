#include "stoker/python/image_binding.h"

#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/image/image_header.h"
#include "stoker/image/resample.h"
#include "stoker/image/torch_float_resize.h"
#include "stoker/pipeline/image_transforms.h"
#include "stoker/python/released_gil.h"
#include "stoker/store/image_record.h"
#include "stoker/util/checksum.h"

namespace stoker::python {
namespace py = pybind11;

Result<ChannelStatistics> decoded_statistics(ByteSpan bytes, image::DecodeBuffer& scratch) {
  STOKER_ASSIGN_OR_RETURN(const image::DecodedCrop decoded,
                          image::decode_rgb(bytes, image::DecodeRequest{}, scratch));
  const image::RgbView& rgb = decoded.pixels;
  ChannelStatistics stats(3);
  stats.add_interleaved(rgb.data, rgb.width, rgb.height, rgb.stride);
  return stats;
}

py::tuple statistics_to_python(const ChannelStatistics& stats) {
  // One image's sums fit in 64 bits: it has at most kDefaultMaxPixels (2^28) pixels, so its
  // sums of squares stay below 2^44.
  py::tuple sums(stats.channels()), squares(stats.channels());
  for (int c = 0; c < stats.channels(); ++c) {
    sums[c] = py::int_(static_cast<uint64_t>(stats.sum(c)));
    squares[c] = py::int_(static_cast<uint64_t>(stats.square_sum(c)));
  }
  return py::make_tuple(stats.pixels(), sums, squares);
}

ChannelStatistics statistics_from_python(py::handle value) {
  std::tuple<uint64_t, std::vector<uint64_t>, std::vector<uint64_t>> parts;
  try {
    parts = value.cast<decltype(parts)>();
  } catch (const py::cast_error&) {
    throw py::value_error(
        "image statistics are a tuple (pixels, sums, squares) of non-negative "
        "64-bit ints and two tuples of them, not " +
        py::repr(value).cast<std::string>());
  }
  const auto& [pixels, sums, squares] = parts;
  if (sums.size() != 3 || squares.size() != 3)
    throw py::value_error("image statistics have 3 sums and 3 squares (R, G, B), not " +
                          std::to_string(sums.size()) + " and " + std::to_string(squares.size()));
  Result<ChannelStatistics> stats = ChannelStatistics::from_sums(pixels, {sums.begin(), sums.end()},
                                                                 {squares.begin(), squares.end()});
  if (!stats.is_ok()) throw py::value_error("image " + stats.status().message());
  return std::move(stats).value();
}

namespace {

// The image record's fields as (name, dtype, shape) tuples, the writer's form.
std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> image_record_fields() {
  std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> fields;
  const Schema schema = image_record_schema();
  for (const Field& f : schema.fields()) fields.emplace_back(f.name, dtype_name(f.dtype), f.shape);
  return fields;
}

// {"format", "width", "height", "checksum"} of the JPEG or PNG in `data`; with `check`, the
// whole image is decoded too, as the importer checks every image it stores, and "statistics"
// holds its pixels' statistics. Raises stoker.Error (one line) on anything else.
py::dict image_info(const py::buffer& data, bool check) {
  const py::buffer_info buffer = data.request();
  if (buffer.ndim > 1 || (buffer.ndim == 1 && buffer.strides[0] != buffer.itemsize))
    throw py::value_error("an encoded image is one contiguous run of bytes");
  const ByteSpan bytes{static_cast<const uint8_t*>(buffer.ptr),
                       static_cast<size_t>(buffer.size * buffer.itemsize)};
  Result<image::ImageHeader> header = invalid_argument("unread");
  Result<ChannelStatistics> statistics = invalid_argument("not decoded");
  uint64_t checksum = 0;
  {
    ReleasedGil no_gil;
    header = image::read_image_header(bytes);
    if (header.is_ok() && check) {
      image::DecodeBuffer scratch;
      statistics = decoded_statistics(bytes, scratch);
    }
    checksum = xxh3_64(bytes.data, bytes.size);
  }
  throw_if_error(header.status());
  py::dict info;
  if (check) {
    throw_if_error(statistics.status());
    info["statistics"] = statistics_to_python(statistics.value());
  }
  info["format"] = image::format_name(header.value().format);
  info["width"] = header.value().width;
  info["height"] = header.value().height;
  // As the importer stores it: the 64 bits of XXH3-64 as an int64.
  info["checksum"] = static_cast<int64_t>(checksum);
  return info;
}

// `pixels` (a C-contiguous uint8 [H, W, 3] buffer) as an RGB view; `who` names the caller.
image::RgbView rgb_view_of(const py::buffer_info& buffer, const char* who) {
  if (buffer.ndim != 3 || buffer.shape[2] != 3 || buffer.itemsize != 1 || buffer.strides[2] != 1 ||
      buffer.strides[1] != 3 || buffer.strides[0] != 3 * buffer.shape[1])
    throw py::value_error(std::string(who) + " takes C-contiguous uint8 pixels [H, W, 3]");
  return image::RgbView{static_cast<const uint8_t*>(buffer.ptr), static_cast<int>(buffer.shape[1]),
                        static_cast<int>(buffer.shape[0]),
                        static_cast<ptrdiff_t>(buffer.strides[0])};
}

image::ResampleFilter filter_named(const std::string& interpolation) {
  return interpolation == "bicubic" ? image::ResampleFilter::kBicubic
                                    : image::ResampleFilter::kBilinear;
}

// torch's float32 antialiased resize (image/torch_float_resize.h) of the uint8 RGB image
// `pixels` (a C-contiguous [H, W, 3] buffer) to height x width, float32 bytes [height, width,
// 3] before rounding, the taps added as the operations' `backend` "tensor_float" (torch 2.11's
// order) or "tensor_float_fused" (torch 2.4's) adds them: what stoker.transforms compares with
// torch itself before it takes that backend.
py::bytes torch_float_resize(const py::buffer& pixels, int height, int width,
                             const std::string& interpolation, const std::string& backend) {
  const ResizeBackend named = resize_backend_named(backend);
  if (named != ResizeBackend::kTensorFloat && named != ResizeBackend::kTensorFloatFused)
    throw py::value_error(
        "torch_float_resize: backend must be tensor_float or "
        "tensor_float_fused, not '" +
        backend + "'");
  const py::buffer_info buffer = pixels.request();
  const image::RgbView view = rgb_view_of(buffer, "torch_float_resize");
  std::vector<float> out;
  throw_if_error(image::torch_float_resize(
      view, 0, 0, view.width, view.height, width, height, image::ResampleWindow{},
      filter_named(interpolation), out,
      named == ResizeBackend::kTensorFloatFused ? image::TorchFloatSums::kFused
                                                : image::TorchFloatSums::kUnrolled));
  return py::bytes(reinterpret_cast<const char*>(out.data()), out.size() * sizeof(float));
}

// torch's antialiased uint8 resize (the resampler at torch's precision: resample.h) of the uint8
// RGB image `pixels` to height x width, uint8 bytes [3, height, width]: what stoker.transforms
// compares with torch itself before it takes backend="tensor".
py::bytes torch_uint8_resize(const py::buffer& pixels, int height, int width,
                             const std::string& interpolation) {
  const py::buffer_info buffer = pixels.request();
  const image::RgbView view = rgb_view_of(buffer, "torch_uint8_resize");
  image::ResampleOutput out;
  out.width = width;
  out.height = height;
  out.filter = filter_named(interpolation);
  out.type = image::ResampleOutput::Type::kUint8;
  out.precision_x = image::torch_precision_bits(view.width, width, out.filter);
  out.precision_y = image::torch_precision_bits(view.height, height, out.filter);
  std::string bytes(static_cast<size_t>(3) * width * height, '\0');
  image::Resampler resampler;
  throw_if_error(resampler.resample(
      view,
      image::PixelBox{0, 0, static_cast<double>(view.width), static_cast<double>(view.height)}, out,
      reinterpret_cast<uint8_t*>(bytes.data())));
  return py::bytes(bytes);
}

}  // namespace

void register_image(py::module_& module) {
  module.def("torch_float_resize", &torch_float_resize, py::arg("pixels"), py::arg("height"),
             py::arg("width"), py::arg("interpolation"), py::arg("backend") = "tensor_float",
             "torch's float32 antialiased resize of uint8 RGB pixels [H, W, 3], as float32 "
             "bytes [height, width, 3] (\"bilinear\" or \"bicubic\"), the taps added as "
             "torch 2.11 does (backend=\"tensor_float\") or torch 2.4 "
             "(\"tensor_float_fused\").");
  module.def("torch_uint8_resize", &torch_uint8_resize, py::arg("pixels"), py::arg("height"),
             py::arg("width"), py::arg("interpolation"),
             "torch's antialiased uint8 resize of uint8 RGB pixels [H, W, 3], as uint8 bytes "
             "[3, height, width] (\"bilinear\" or \"bicubic\").");
  module.def("image_record_fields", &image_record_fields,
             "The fields of an image dataset's records, as (name, dtype, shape) tuples.");
  module.def("image_info", &image_info, py::arg("data"), py::kw_only(), py::arg("check") = true,
             "Format, width, height and XXH3-64 checksum of an encoded JPEG or PNG; with "
             "`check`, decodes it whole first and adds its pixel statistics (pixels, sums, "
             "squares). Raises stoker.Error if it is not a good image.");
}

}  // namespace stoker::python
