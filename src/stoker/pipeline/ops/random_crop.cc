// random_crop: torchvision's RandomCrop(size, padding, pad_if_needed, fill, padding_mode) on the
// PIL path (v1's forward): the uint8 image [C, H, W] padded by `padding` (1 value: every side;
// 2: left/right, top/bottom; 4: left, top, right, bottom) with `fill` (constant, one value or one
// per channel) or its edge, reflection or symmetric copy; then, with pad_if_needed, a width W'
// narrower than the crop's tw padded again by tw - W' on both sides, then a height likewise
// (each a second F.pad of the padded image; with pad_once, v2's make_params: those pixels
// added to the padding, one pad, which differs for reflect and symmetric); then cut to the
// crop (th, tw) at
// top = uniform_below(H'' - th + 1), left = uniform_below(W'' - tw + 1), two draws from the
// operation's own stream (torchvision's get_params' randint). The crop may be smaller or larger
// than the image (a ResizingPixelOp, op_registry.h); no size is the image's own. Pixel copies
// only: ops/random_crop_test.cc compares with torchvision's RandomCrop on PIL images.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/pipeline/ops/channel_count.h"

namespace stoker::ops {
namespace {

enum class PadMode { kConstant, kEdge, kReflect, kSymmetric };

// The source index of padded position `i` (may be outside [0, n)) under `mode`; -1: the fill.
int64_t source_index(int64_t i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : n - 1;
    case PadMode::kReflect: {  // ... 2 1 | 0 1 2 ... n-1 | n-2 ...
      const int64_t period = 2 * (n - 1);
      if (period == 0) return 0;
      int64_t k = ((i % period) + period) % period;
      return k < n ? k : period - k;
    }
    case PadMode::kSymmetric: {  // ... 1 0 | 0 1 2 ... n-1 | n-1 ...
      const int64_t period = 2 * n;
      int64_t k = ((i % period) + period) % period;
      return k < n ? k : period - 1 - k;
    }
  }
  return -1;
}

// One axis of n pixels padded by `before` and `after`, then by `again` on both sides: for each
// position of the result, the source index (-1: the fill).
std::vector<int64_t> padded_axis(int64_t n, int64_t before, int64_t after, int64_t again,
                                 PadMode mode) {
  const int64_t once = n + before + after;
  std::vector<int64_t> index(static_cast<size_t>(once + 2 * again));
  for (int64_t i = 0; i < static_cast<int64_t>(index.size()); ++i) {
    const int64_t j = source_index(i - again, once, mode);
    index[static_cast<size_t>(i)] = j < 0 ? -1 : source_index(j - before, n, mode);
  }
  return index;
}

class RandomCrop : public ResizingPixelOp {
 public:
  RandomCrop(std::vector<int64_t> rows, std::vector<int64_t> columns, std::vector<uint8_t> fill,
             const std::vector<int64_t>& shape, int64_t height, int64_t width)
      : rows_(std::move(rows)),
        columns_(std::move(columns)),
        fill_(std::move(fill)),
        in_height_(shape[1]),
        in_width_(shape[2]),
        out_shape_{shape[0], height, width} {}

  const std::vector<int64_t>& output_shape() const override { return out_shape_; }

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    thread_local std::vector<uint8_t> source;
    source.assign(pixels, pixels + out_shape_[0] * in_height_ * in_width_);
    return apply_to(input, source.data(), pixels);
  }

  Status apply_to(const SampleInput& input, const uint8_t* in, uint8_t* out) const override {
    const int64_t height = out_shape_[1], width = out_shape_[2];
    CounterRng rng = input.rng();
    const auto top = static_cast<int64_t>(
        rng.uniform_below(static_cast<uint64_t>(static_cast<int64_t>(rows_.size()) - height + 1)));
    const auto left = static_cast<int64_t>(rng.uniform_below(
        static_cast<uint64_t>(static_cast<int64_t>(columns_.size()) - width + 1)));
    for (int64_t c = 0; c < out_shape_[0]; ++c) {
      const uint8_t* plane = in + c * in_height_ * in_width_;
      const uint8_t fill = fill_[fill_.size() == 1 ? 0 : c];
      for (int64_t y = 0; y < height; ++y) {
        const int64_t sy = rows_[static_cast<size_t>(top + y)];
        uint8_t* row = out + (c * height + y) * width;
        for (int64_t x = 0; x < width; ++x) {
          const int64_t sx = columns_[static_cast<size_t>(left + x)];
          row[x] = sy < 0 || sx < 0 ? fill : plane[sy * in_width_ + sx];
        }
      }
    }
    return Status::ok();
  }

 private:
  const std::vector<int64_t> rows_, columns_;  // the padded image's axes
  const std::vector<uint8_t> fill_;
  const int64_t in_height_, in_width_;
  const std::vector<int64_t> out_shape_;
};

}  // namespace

OpSpec random_crop() {
  OpSpec op;
  op.name = "random_crop";
  op.role = OpRole::kPixel;
  op.backend = OpBackend::kBoth;
  op.python_class = "RandomCrop";
  op.doc =
      "The image padded, then a crop of size at a random place, smaller or larger than the "
      "image (torchvision's RandomCrop; CIFAR's RandomCrop(32, padding=4))";
  op.params = {
      ParamSpec::reals("size", {}, "the crop, (h, w) or one side (empty: the image's own)", 0, 2)
          .in(1, 1 << 15),
      ParamSpec::reals("padding", {0},
                       "pixels added: all sides; left/right, top/bottom; or left, "
                       "top, right, bottom",
                       1, 4)
          .in(0, 1 << 15),
      ParamSpec::flag("pad_if_needed", false,
                      "a side shorter than the crop padded on both ends by the difference"),
      ParamSpec::flag("pad_once", false,
                      "pad_if_needed's pixels added to the padding, one pad (torchvision v2's), "
                      "not a second pad (v1's)"),
      ParamSpec::reals("fill", {0}, "the constant padding's value, one or one per channel", 1,
                       ParamSpec::kAnyCount)
          .in(0, 255),
      ParamSpec::choice("padding_mode", "constant", {"constant", "edge", "reflect", "symmetric"},
                        "how the padding is made, as torchvision's"),
  };
  op.make_pixel = [](const Params& params,
                     const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    const std::vector<int64_t>& shape = context.shape;
    const auto fail = [&](const std::string& what) {
      return invalid_argument(fmt::format("field '{}': random_crop: {}", context.field, what));
    };
    if (shape.size() != 3) return fail("needs images [C, H, W]");
    const std::vector<double>& size = params.reals("size");
    const std::vector<double>& p = params.reals("padding");
    if (p.size() == 3) return fail("padding has 1, 2 or 4 values, not 3");
    for (double v : p)
      if (v != std::floor(v)) return fail(fmt::format("padding {} is not a whole number", v));
    for (double v : size)
      if (v != std::floor(v)) return fail(fmt::format("size {} is not a whole number", v));
    const int64_t height = size.empty() ? shape[1] : static_cast<int64_t>(size.front());
    const int64_t width = size.empty() ? shape[2] : static_cast<int64_t>(size.back());
    std::vector<int64_t> pad;  // left, top, right, bottom
    for (size_t i = 0; i < 4; ++i)
      pad.push_back(static_cast<int64_t>(p.size() == 1 ? p[0] : p.size() == 2 ? p[i % 2] : p[i]));
    const std::string& mode_name = params.choice("padding_mode");
    const PadMode mode = mode_name == "edge"        ? PadMode::kEdge
                         : mode_name == "reflect"   ? PadMode::kReflect
                         : mode_name == "symmetric" ? PadMode::kSymmetric
                                                    : PadMode::kConstant;
    const int64_t padded_height = shape[1] + pad[1] + pad[3];
    const int64_t padded_width = shape[2] + pad[0] + pad[2];
    const bool pad_if_needed = params.flag("pad_if_needed");
    int64_t again_rows = pad_if_needed ? std::max<int64_t>(0, height - padded_height) : 0;
    int64_t again_columns = pad_if_needed ? std::max<int64_t>(0, width - padded_width) : 0;
    if (params.flag("pad_once")) {  // v2: one pad of the padding and pad_if_needed's pixels
      for (size_t side : {1, 3}) pad[side] += again_rows;
      for (size_t side : {0, 2}) pad[side] += again_columns;
      again_rows = again_columns = 0;
    }
    if (mode == PadMode::kReflect &&
        (pad[0] >= shape[2] || pad[2] >= shape[2] || pad[1] >= shape[1] || pad[3] >= shape[1] ||
         again_rows >= padded_height || again_columns >= padded_width))
      return fail("reflect padding must be smaller than the image");
    if (shape[1] + pad[1] + pad[3] + 2 * again_rows < height ||
        shape[2] + pad[0] + pad[2] + 2 * again_columns < width)
      return fail(fmt::format(
          "the crop {} x {} is larger than the padded image {} x {} (pad_if_needed pads it)",
          height, width, padded_height, padded_width));
    const std::vector<double>& f = params.reals("fill");
    if (Status s = check_per_channel(context, "random_crop", "fill", f.size()); !s.is_ok())
      return s;
    std::vector<uint8_t> fill;
    for (double v : f) fill.push_back(static_cast<uint8_t>(v));
    return std::shared_ptr<const PixelOp>(
        std::make_shared<RandomCrop>(padded_axis(shape[1], pad[1], pad[3], again_rows, mode),
                                     padded_axis(shape[2], pad[0], pad[2], again_columns, mode),
                                     std::move(fill), shape, height, width));
  };
  return op;
}

}  // namespace stoker::ops
