// random_crop: torchvision's RandomCrop(size, padding, fill, padding_mode) where `size` is the
// image's own, as CIFAR's RandomCrop(32, padding=4) (another size is refused: a pixel operation
// keeps the shape; torchvision's RandomCrop runs in Python): the uint8 image [C, H, W] padded by
// `padding` (1 value: every side; 2: left/right, top/bottom; 4: left, top, right, bottom) with
// `fill` (constant) or its edge, reflection or symmetric copy, then cut back to H x W at
// top = uniform_below(H + top + bottom - H + 1), left = uniform_below(W + left + right - W + 1),
// two draws from the operation's own stream. Pixel copies only: torchvision's F.pad + F.crop give
// the same bytes on PIL images and tensors (ops/random_crop_test.cc compares).
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

class RandomCrop : public PixelOp {
 public:
  RandomCrop(std::vector<int64_t> pad, std::vector<uint8_t> fill, PadMode mode,
             const std::vector<int64_t>& shape)
      : pad_(std::move(pad)),  // left, top, right, bottom
        fill_(std::move(fill)),
        mode_(mode),
        channels_(shape[0]),
        height_(shape[1]),
        width_(shape[2]) {}

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    CounterRng rng = input.rng();
    const auto top = static_cast<int64_t>(rng.uniform_below(pad_[1] + pad_[3] + 1)) - pad_[1];
    const auto left = static_cast<int64_t>(rng.uniform_below(pad_[0] + pad_[2] + 1)) - pad_[0];
    thread_local std::vector<uint8_t> source;
    source.assign(pixels, pixels + channels_ * height_ * width_);
    for (int64_t c = 0; c < channels_; ++c) {
      const uint8_t* plane = source.data() + c * height_ * width_;
      const uint8_t fill = fill_[fill_.size() == 1 ? 0 : c];
      for (int64_t y = 0; y < height_; ++y) {
        const int64_t sy = source_index(top + y, height_, mode_);
        uint8_t* out = pixels + (c * height_ + y) * width_;
        for (int64_t x = 0; x < width_; ++x) {
          const int64_t sx = source_index(left + x, width_, mode_);
          out[x] = sy < 0 || sx < 0 ? fill : plane[sy * width_ + sx];
        }
      }
    }
    return Status::ok();
  }

 private:
  const std::vector<int64_t> pad_;
  const std::vector<uint8_t> fill_;
  const PadMode mode_;
  const int64_t channels_, height_, width_;
};

}  // namespace

OpSpec random_crop() {
  OpSpec op;
  op.name = "random_crop";
  op.role = OpRole::kPixel;
  op.python_class = "RandomCrop";
  op.doc =
      "The image padded, then a crop of its own size at a random place (torchvision's "
      "RandomCrop(size, padding), CIFAR's augmentation)";
  op.params = {
      ParamSpec::reals("size", {}, "the crop, (h, w) or one side: the image's own (empty: it)", 0,
                       2)
          .in(1, 1 << 15),
      ParamSpec::reals("padding", {0},
                       "pixels added: all sides; left/right, top/bottom; or left, "
                       "top, right, bottom",
                       1, 4)
          .in(0, 1 << 15),
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
    if (!size.empty() && (size.front() != static_cast<double>(shape[1]) ||
                          size.back() != static_cast<double>(shape[2])))
      return fail(fmt::format("crops to the image's own size ({} x {}) only, not {} x {}", shape[1],
                              shape[2], size.front(), size.back()));
    const std::vector<double>& p = params.reals("padding");
    if (p.size() == 3) return fail("padding has 1, 2 or 4 values, not 3");
    for (double v : p)
      if (v != std::floor(v)) return fail(fmt::format("padding {} is not a whole number", v));
    std::vector<int64_t> pad;
    for (size_t i = 0; i < 4; ++i)
      pad.push_back(static_cast<int64_t>(p.size() == 1 ? p[0] : p.size() == 2 ? p[i % 2] : p[i]));
    const std::string& mode_name = params.choice("padding_mode");
    const PadMode mode = mode_name == "edge"        ? PadMode::kEdge
                         : mode_name == "reflect"   ? PadMode::kReflect
                         : mode_name == "symmetric" ? PadMode::kSymmetric
                                                    : PadMode::kConstant;
    if (mode == PadMode::kReflect &&
        (pad[0] >= shape[2] || pad[2] >= shape[2] || pad[1] >= shape[1] || pad[3] >= shape[1]))
      return fail("reflect padding must be smaller than the image");
    const std::vector<double>& f = params.reals("fill");
    if (Status s = check_per_channel(context, "random_crop", "fill", f.size()); !s.is_ok())
      return s;
    std::vector<uint8_t> fill;
    for (double v : f) fill.push_back(static_cast<uint8_t>(v));
    return std::shared_ptr<const PixelOp>(
        std::make_shared<RandomCrop>(std::move(pad), std::move(fill), mode, shape));
  };
  return op;
}

}  // namespace stoker::ops
