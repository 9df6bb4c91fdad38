#include "stoker/pipeline/joint_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include "stoker/image/gray_png_decode.h"
#include "stoker/pipeline/image_planes.h"
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/ops/joint_canvas.h"
#include "stoker/store/record_view.h"

namespace stoker {
namespace {

// The stored fields' indices in the records' schema (masks -1: none).
struct JointFieldIndex {
  int image = -1, boxes = -1, labels = -1, masks = -1, class_map = -1;
};

class JointPipeline : public JointTransform {
 public:
  JointPipeline(JointFields names, JointFieldIndex index, int64_t max_rows,
                std::vector<std::shared_ptr<const JointOp>> ops)
      : names_(std::move(names)),
        index_(index),
        max_rows_(max_rows),
        masks_side_(names_.masks_max_size > 0 ? names_.masks_max_size : names_.max_size),
        ops_(std::move(ops)) {
    // torchvision's float32 value of each byte and channel (image/float_pixel.h), computed once.
    for (size_t c = 0; c < 3; ++c) {
      const bool normalised = !names_.mean.empty();
      for (int v = 0; v < 256; ++v)
        float_values_[c][v] = image::float_pixel(static_cast<uint8_t>(v), names_.float_unit,
                                                 normalised ? names_.mean[c] : 0.0f,
                                                 normalised ? names_.std[c] : 1.0f);
    }
    const int64_t side = names_.max_size;
    outputs_ = {
        {names_.image, names_.float_image ? DType::kFloat32 : DType::kUint8, {3, side, side}}};
    if (index_.boxes >= 0) {
      outputs_.push_back({names_.boxes, DType::kFloat32, {max_rows_, 4}});
      outputs_.push_back({names_.labels, DType::kInt64, {max_rows_}});
    }
    if (index_.masks >= 0)
      outputs_.push_back({names_.masks, DType::kUint8, {max_rows_, masks_side_, masks_side_}});
    if (index_.class_map >= 0)
      outputs_.push_back(
          {names_.class_map, names_.class_map_int64 ? DType::kInt64 : DType::kUint8, {side, side}});
  }

  const std::vector<Output>& outputs() const override { return outputs_; }

  Status apply(const SampleInput& input, uint8_t* const* slots,
               int64_t* const* shapes) const override {
    thread_local JointSample sample;
    if (Status s = read(input, sample); !s.is_ok()) return s;
    SampleInput own = input;
    for (const auto& op : ops_) {
      ++own.step;
      if (!op->takes_unsettled()) STOKER_RETURN_IF_ERROR(ops::settle_joint_sample(sample));
      if (Status s = op->apply(own, sample); !s.is_ok()) return s;
    }
    if (sample.resized_from_width > 0) STOKER_RETURN_IF_ERROR(ops::settle_joint_sample(sample));
    return write(sample, slots, shapes);
  }

 private:
  // A bad sample's one line naming `field`: kInvalidArgument, or the code of `cause`.
  static Status fail(const std::string& field, const std::string& message) {
    return invalid_argument(fmt::format("field '{}': {}", field, message));
  }
  static Status fail(const std::string& field, const Status& cause) {
    return Status(cause.code(), fmt::format("field '{}': {}", field, cause.message()));
  }

  // The sample as stored: the image decoded, boxes and labels of one count, boxes within the
  // image, masks of its size.
  Status read(const SampleInput& input, JointSample& sample) const {
    Result<ByteSpan> encoded = variable_field(*input.schema, input.record, index_.image);
    if (!encoded.is_ok()) return fail(names_.image, encoded.status());
    // The stored image may pass max_size where the steps shrink it (write checks what they
    // make); the decoder's own limit guards the decode.
    Result<PlanesSize> size = image_size_within(encoded.value(), kMaxImageSize);
    if (!size.is_ok()) return fail(names_.image, size.status());
    sample.height = size.value().height;
    sample.width = size.value().width;
    sample.resized_from_width = sample.resized_from_height = 0;
    sample.mirrored = false;
    sample.interleaved = true;
    // The decoded rows as they are: the first copy that has to change them changes the layout.
    Result<image::RgbView> decoded = decode_of_size(encoded.value(), size.value());
    if (!decoded.is_ok()) return fail(names_.image, decoded.status());
    const size_t row_bytes = static_cast<size_t>(3 * sample.width);
    sample.image.resize(row_bytes * static_cast<size_t>(sample.height));
    for (int y = 0; y < size.value().height; ++y)
      std::memcpy(sample.image.data() + y * row_bytes, decoded.value().row(y), row_bytes);
    sample.boxes.clear();
    sample.labels.clear();
    if (index_.boxes >= 0) {
      if (Status s = read_boxes(input, sample); !s.is_ok()) return s;
    }
    sample.has_masks = index_.masks >= 0;
    sample.masks.clear();
    sample.masks_kept = false;
    if (sample.has_masks) {
      if (Status s = read_masks(input, sample); !s.is_ok()) return s;
    }
    sample.has_class_map = index_.class_map >= 0;
    return sample.has_class_map ? read_class_map(input, sample) : Status::ok();
  }

  // Boxes and labels of one count, every box inside the image.
  Status read_boxes(const SampleInput& input, JointSample& sample) const {
    if (Status s = read_rows(input, index_.boxes, names_.boxes, sample.boxes); !s.is_ok()) return s;
    if (Status s = read_rows(input, index_.labels, names_.labels, sample.labels); !s.is_ok())
      return s;
    if (sample.boxes.size() != 4 * sample.labels.size())
      return fail(names_.labels, fmt::format("{} labels for {} boxes in '{}'", sample.labels.size(),
                                             sample.boxes.size() / 4, names_.boxes));
    for (int64_t k = 0; k < sample.rows(); ++k) {
      const float* box = &sample.boxes[4 * k];
      const bool inside = box[0] >= 0 && box[1] >= 0 && box[2] <= sample.width &&
                          box[3] <= sample.height && box[2] >= 0 && box[3] >= 0 &&
                          box[0] <= sample.width && box[1] <= sample.height;
      if (!inside)  // NaN compares false: not inside
        return fail(names_.boxes,
                    fmt::format("box {} ({}, {}, {}, {}) lies outside the {}x{} image", k, box[0],
                                box[1], box[2], box[3], sample.width, sample.height));
    }
    return Status::ok();
  }

  // The class map: a PNG of the image's size.
  Status read_class_map(const SampleInput& input, JointSample& sample) const {
    Result<ByteSpan> png = variable_field(*input.schema, input.record, index_.class_map);
    if (!png.is_ok()) return fail(names_.class_map, png.status());
    const image::GraySize size = {sample.width, sample.height};
    if (Status s = image::decode_gray_png(png.value(), size, sample.class_map); !s.is_ok())
      return fail(names_.class_map,
                  Status(s.code(), fmt::format("the class map of the {}x{} image: {}", sample.width,
                                               sample.height, s.message())));
    return Status::ok();
  }

  // Stored variable-length field `field` as values of T.
  template <typename T>
  Status read_rows(const SampleInput& input, int field, const std::string& name,
                   std::vector<T>& values) const {
    Result<ByteSpan> bytes = variable_field(*input.schema, input.record, field);
    if (!bytes.is_ok()) return fail(name, bytes.status());
    if (bytes.value().size % sizeof(T) != 0)
      return fail(name, corrupt(fmt::format("{} bytes are not whole values", bytes.value().size)));
    values.resize(bytes.value().size / sizeof(T));
    if (!values.empty()) std::memcpy(values.data(), bytes.value().data, bytes.value().size);
    return Status::ok();
  }

  Status read_masks(const SampleInput& input, JointSample& sample) const {
    Result<ByteSpan> png = variable_field(*input.schema, input.record, index_.masks);
    if (!png.is_ok()) return fail(names_.masks, png.status());
    const int64_t n = sample.rows();
    if (png.value().size == 0) {
      if (n == 0) return Status::ok();
      return fail(names_.masks, fmt::format("no masks for {} boxes", n));
    }
    const image::GraySize stacked = {sample.width, n * sample.height};
    if (Status s = image::decode_gray_png(png.value(), stacked, sample.masks); !s.is_ok())
      return fail(names_.masks,
                  Status(s.code(), fmt::format("{} masks of the {}x{} image: {}", n, sample.width,
                                               sample.height, s.message())));
    return Status::ok();
  }

  // `rows` rows of `width` values from `in` (row r at in + r * stride, its values `step` bytes
  // apart) to `out` (back to back), each convert(value), mirrored left to right or not.
  template <typename T, typename Convert>
  static void copy_rows(const uint8_t* in, int64_t stride, int64_t step, T* out, int64_t rows,
                        int64_t width, bool mirrored, Convert convert) {
    for (int64_t r = 0; r < rows; ++r, in += stride, out += width) {
      if (mirrored && step == 1) {
        for (int64_t x = 0; x < width; ++x) out[x] = convert(in[width - 1 - x]);
      } else if (mirrored) {
        for (int64_t x = 0; x < width; ++x) out[x] = convert(in[(width - 1 - x) * step]);
      } else if (step == 1) {
        for (int64_t x = 0; x < width; ++x) out[x] = convert(in[x]);
      } else {
        for (int64_t x = 0; x < width; ++x) out[x] = convert(in[x * step]);
      }
    }
  }

  // The sample into its slots: settled, or with its image's mirror and decoded layout waiting
  // (applied on the way, as the float conversion's copy is made anyway).
  Status write(const JointSample& sample, uint8_t* const* slots, int64_t* const* shapes) const {
    if (sample.height > names_.max_size || sample.width > names_.max_size)
      return fail(names_.image, fmt::format("the image is {}x{}, larger than max_size {}",
                                            sample.width, sample.height, names_.max_size));
    const int64_t n = sample.rows();
    if (n > max_rows_)
      return fail(names_.boxes, fmt::format("{} rows, more than the capacity of {}", n, max_rows_));
    const int64_t width = sample.width, height = sample.height, plane = width * height;
    const bool mirrored = sample.mirrored;
    for (int64_t c = 0; c < 3; ++c) {
      // Channel c's rows: in the decoded RGB rows, or in its plane.
      const uint8_t* in = sample.image.data() + (sample.interleaved ? c : c * plane);
      const int64_t step = sample.interleaved ? 3 : 1;
      if (names_.float_image) {
        const float* values = float_values_[c].data();
        copy_rows(in, step * width, step, reinterpret_cast<float*>(slots[0]) + c * plane, height,
                  width, mirrored, [values](uint8_t v) { return values[v]; });
      } else {
        copy_rows(in, step * width, step, slots[0] + c * plane, height, width, mirrored,
                  [](uint8_t v) { return v; });
      }
    }
    shapes[0][0] = 3;
    shapes[0][1] = sample.height;
    shapes[0][2] = sample.width;
    int o = 1;
    if (index_.boxes >= 0) {
      std::memcpy(slots[o], sample.boxes.data(), sample.boxes.size() * sizeof(float));
      shapes[o][0] = n;
      shapes[o][1] = 4;
      std::memcpy(slots[o + 1], sample.labels.data(), sample.labels.size() * sizeof(int64_t));
      shapes[o + 1][0] = n;
      o += 2;
    }
    if (index_.masks >= 0) {
      if (Status s = write_masks(sample, slots[o], shapes[o]); !s.is_ok()) return s;
      ++o;
    }
    if (index_.class_map >= 0) {
      if (names_.class_map_int64)
        copy_rows(sample.class_map.data(), width, 1, reinterpret_cast<int64_t*>(slots[o]), height,
                  width, mirrored, [](uint8_t v) { return static_cast<int64_t>(v); });
      else
        copy_rows(sample.class_map.data(), width, 1, slots[o], height, width, mirrored,
                  [](uint8_t v) { return v; });
      shapes[o][0] = sample.height;
      shapes[o][1] = sample.width;
    }
    return Status::ok();
  }

  // The masks into their slot: moved with the image, or kept as an operation left them.
  Status write_masks(const JointSample& sample, uint8_t* slot, int64_t* shape) const {
    const bool kept = sample.masks_kept;
    const int64_t rows = kept ? sample.kept_rows : sample.rows();
    const int64_t height = kept ? sample.kept_height : sample.height;
    const int64_t width = kept ? sample.kept_width : sample.width;
    if (rows > max_rows_ || height > masks_side_ || width > masks_side_)
      return fail(names_.masks,
                  fmt::format("{} masks of {}x{}, more than the capacity of {} of {}x{}", rows,
                              width, height, max_rows_, masks_side_, masks_side_));
    copy_rows(kept ? sample.kept_masks.data() : sample.masks.data(), width, 1, slot, rows * height,
              width, kept ? sample.kept_mirrored : sample.mirrored, [](uint8_t v) { return v; });
    shape[0] = rows;
    shape[1] = height;
    shape[2] = width;
    return Status::ok();
  }

  const JointFields names_;
  const JointFieldIndex index_;
  const int64_t max_rows_;
  const int64_t masks_side_;  // the masks' slots' side
  const std::vector<std::shared_ptr<const JointOp>> ops_;
  std::array<std::array<float, 256>, 3> float_values_;  // the float image's value of each byte
  std::vector<Output> outputs_;
};

// Field `name` of `schema` if it is `want`: "bytes" (an encoded image or PNG), or a
// variable-length `dtype` field of `row_shape` rows.
Result<int> stored(const Schema& schema, const std::string& name, const char* what,
                   std::optional<DType> dtype, const std::vector<int64_t>& row_shape) {
  const int f = schema.find(name);
  if (f < 0) return invalid_argument("the dataset has no field '" + name + "'");
  const Field& field = schema.fields()[f];
  const bool fits =
      dtype ? field.is_variable_length() && field.dtype == *dtype && field.shape == row_shape
            : field.dtype == DType::kBytes;
  if (!fits)
    return invalid_argument(
        fmt::format("field '{}': a joint transform reads it as {}", name, what));
  return f;
}

}  // namespace

Result<std::vector<FieldRequest>> make_joint_requests(
    const Schema& schema, const JointFields& fields, const std::vector<OpCall>& calls,
    const std::map<std::string, uint64_t>& max_lengths) {
  if (fields.max_size < 1 || fields.max_size > kMaxImageSize)
    return invalid_argument(fmt::format("field '{}': max_size {} is outside 1..{}", fields.image,
                                        fields.max_size, kMaxImageSize));
  JointFieldIndex index;
  STOKER_ASSIGN_OR_RETURN(index.image,
                          stored(schema, fields.image, "encoded images (bytes)", {}, {}));
  if (fields.boxes.empty() != fields.labels.empty() ||
      (fields.boxes.empty() && !fields.masks.empty()))
    return invalid_argument(fmt::format(
        "field '{}': a joint transform reads boxes and labels together, masks with them",
        fields.image));
  if (!fields.mean.empty() &&
      (!fields.float_image || fields.mean.size() != 3 || fields.std.size() != 3))
    return invalid_argument(fmt::format(
        "field '{}': a joint transform normalises float images by 3 means and stds", fields.image));
  int64_t max_rows = 1;
  if (!fields.boxes.empty()) {
    STOKER_ASSIGN_OR_RETURN(
        index.boxes, stored(schema, fields.boxes, "float32 boxes [N, 4]", DType::kFloat32, {4}));
    STOKER_ASSIGN_OR_RETURN(index.labels,
                            stored(schema, fields.labels, "int64 labels [N]", DType::kInt64, {}));
    const auto most = max_lengths.find(fields.boxes);
    if (most == max_lengths.end())
      return invalid_argument(
          fmt::format("field '{}' varies in length and the manifest gives no max_lengths for it",
                      fields.boxes));
    max_rows = static_cast<int64_t>(std::min<uint64_t>(std::max<uint64_t>(most->second, 1),
                                                       static_cast<uint64_t>(kMaxDimension)));
  }
  if (!fields.masks.empty()) {
    STOKER_ASSIGN_OR_RETURN(index.masks,
                            stored(schema, fields.masks, "a PNG of stacked masks (bytes)", {}, {}));
  }
  if (!fields.class_map.empty()) {
    STOKER_ASSIGN_OR_RETURN(index.class_map,
                            stored(schema, fields.class_map, "a PNG class map (bytes)", {}, {}));
  }
  std::vector<std::shared_ptr<const JointOp>> ops;
  for (const OpCall& call : calls) {
    if (call.op->role != OpRole::kJoint)
      return invalid_argument(fmt::format(
          "field '{}': {} is a {} operation; a joint transform takes joint operations only",
          fields.image, call.op->name, to_string(call.op->role)));
    Result<std::shared_ptr<const JointOp>> op = call.op->make_joint(call.params);
    if (!op.is_ok()) return op.status();
    ops.push_back(op.value());
  }
  auto joint = std::make_shared<JointPipeline>(fields, index, max_rows, std::move(ops));
  std::vector<FieldRequest> requests;
  for (size_t o = 0; o < joint->outputs().size(); ++o)
    requests.emplace_back(joint, static_cast<int>(o));
  return requests;
}

}  // namespace stoker
