// random_shortest_size: torchvision v2's RandomShortestSize(min_size, max_size) on a detection
// sample (image, target) of PIL images, as the detection reference's `multiscale` preset runs
// it. One draw (next_double(), from the operation's own stream) picks a min_size s; with
// r = s / min(H, W), capped by max_size / max(H, W), the sample becomes int(W r) x int(H r)
// (Python's doubles, truncated): the image resized by PIL's antialiased BILINEAR
// (Image.resize, image/resample.h), each mask by torch's NEAREST (interpolate's source index
// floor(i * float(in / out)), in - 1 at most; i / 2 where out = 2 in), each XYXY box's x times
// float32(W' / W) and y times float32(H' / H), as v2's resize_bounding_boxes. Unchanged where
// the size is.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "stoker/image/resample.h"
#include "stoker/pipeline/image_transforms.h"
#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {
namespace {

// torch's nearest source index of output index i (ATen's nearest_idx, no scale given).
int64_t torch_nearest_index(int64_t i, int64_t in, int64_t out) {
  if (out == in) return i;
  if (out == 2 * in) return i >> 1;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(i) * scale)), in - 1);
}

class RandomShortestSize : public JointOp {
 public:
  RandomShortestSize(std::vector<double> min_sizes, int64_t max_size)
      : min_sizes_(std::move(min_sizes)), max_size_(max_size) {}

  Status apply(const SampleInput& input, JointSample& sample) const override {
    const auto pick = static_cast<size_t>(input.rng().next_double() * min_sizes_.size());
    const double min_size = min_sizes_[std::min(pick, min_sizes_.size() - 1)];
    const auto height = static_cast<double>(sample.height);
    const auto width = static_cast<double>(sample.width);
    double r = min_size / std::min(height, width);
    if (max_size_ > 0) r = std::min(r, static_cast<double>(max_size_) / std::max(height, width));
    const auto new_width = static_cast<int64_t>(width * r);
    const auto new_height = static_cast<int64_t>(height * r);
    if (new_width == sample.width && new_height == sample.height) return Status::ok();
    if (new_width < 1 || new_height < 1 || new_width > kMaxImageSize || new_height > kMaxImageSize)
      return invalid_argument(fmt::format("random_shortest_size: the {}x{} image would be {}x{}",
                                          sample.width, sample.height, new_width, new_height));
    if (Status s = resize_image(sample, new_width, new_height); !s.is_ok()) return s;
    if (sample.has_masks) resize_masks(sample, new_width, new_height);
    const auto x_ratio = static_cast<float>(static_cast<double>(new_width) / width);
    const auto y_ratio = static_cast<float>(static_cast<double>(new_height) / height);
    for (size_t k = 0; k < sample.boxes.size(); k += 4) {
      sample.boxes[k] *= x_ratio;
      sample.boxes[k + 1] *= y_ratio;
      sample.boxes[k + 2] *= x_ratio;
      sample.boxes[k + 3] *= y_ratio;
    }
    sample.width = new_width;
    sample.height = new_height;
    return Status::ok();
  }

 private:
  // The planes [3, H, W] resized by PIL's BILINEAR (the resampler reads interleaved RGB).
  static Status resize_image(JointSample& sample, int64_t new_width, int64_t new_height) {
    thread_local std::vector<uint8_t> interleaved, resized;
    thread_local image::Resampler resampler;
    const size_t plane = static_cast<size_t>(sample.height * sample.width);
    interleaved.resize(3 * plane);
    for (size_t i = 0; i < plane; ++i) {
      for (size_t c = 0; c < 3; ++c) interleaved[3 * i + c] = sample.image[c * plane + i];
    }
    const image::RgbView view = {interleaved.data(), static_cast<int>(sample.width),
                                 static_cast<int>(sample.height),
                                 static_cast<ptrdiff_t>(3 * sample.width)};
    image::ResampleOutput out;
    out.width = static_cast<int>(new_width);
    out.height = static_cast<int>(new_height);
    out.type = image::ResampleOutput::Type::kUint8;
    resized.resize(static_cast<size_t>(3 * new_width * new_height));
    const image::PixelBox box = {0, 0, static_cast<double>(sample.width),
                                 static_cast<double>(sample.height)};
    if (Status s = resampler.resample(view, box, out, resized.data()); !s.is_ok()) return s;
    sample.image.swap(resized);
    return Status::ok();
  }

  static void resize_masks(JointSample& sample, int64_t new_width, int64_t new_height) {
    thread_local std::vector<uint8_t> resized;
    thread_local std::vector<int64_t> columns;
    columns.resize(static_cast<size_t>(new_width));
    for (int64_t x = 0; x < new_width; ++x)
      columns[x] = torch_nearest_index(x, sample.width, new_width);
    resized.resize(static_cast<size_t>(sample.rows() * new_height * new_width));
    uint8_t* out = resized.data();
    for (int64_t k = 0; k < sample.rows(); ++k) {
      const uint8_t* mask = sample.masks.data() + k * sample.height * sample.width;
      for (int64_t y = 0; y < new_height; ++y, out += new_width) {
        const uint8_t* row =
            mask + torch_nearest_index(y, sample.height, new_height) * sample.width;
        for (int64_t x = 0; x < new_width; ++x) out[x] = row[columns[x]];
      }
    }
    sample.masks.swap(resized);
  }

  const std::vector<double> min_sizes_;
  const int64_t max_size_;
};

}  // namespace

OpSpec random_shortest_size() {
  OpSpec op;
  op.name = "random_shortest_size";
  op.role = OpRole::kJoint;
  op.python_class = "RandomShortestSize";
  op.doc =
      "The sample resized so that its shorter side is one of min_size (drawn), its longer at "
      "most max_size: image PIL's bilinear, masks nearest, boxes scaled (torchvision v2's "
      "RandomShortestSize)";
  op.params = {
      ParamSpec::reals("min_size", {800}, "the shorter sides drawn from", 1, 64)
          .in(1, kMaxImageSize),
      ParamSpec::integer("max_size", 0, "the longer side's limit (0: none)").in(0, kMaxImageSize),
  };
  op.make_joint = [](const Params& p) -> Result<std::shared_ptr<const JointOp>> {
    return std::shared_ptr<const JointOp>(
        std::make_shared<RandomShortestSize>(p.reals("min_size"), p.integer("max_size")));
  };
  return op;
}

}  // namespace stoker::ops
