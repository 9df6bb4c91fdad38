#pragma once
// The random flips' shared operation (ops/random_horizontal_flip.cc, ops/random_vertical_flip.cc):
// a uint8 [C, H, W] image mirrored along one axis with probability p, one draw
// (next_double() < p) from the operation's stream.

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {

enum class Mirror { kColumns, kRows };

// `planes` planes of height x width at `pixels` mirrored along `axis`.
inline void mirror_planes(uint8_t* pixels, size_t planes, size_t height, size_t width,
                          Mirror axis) {
  for (size_t c = 0; c < planes; ++c) {
    uint8_t* plane = pixels + c * height * width;
    if (axis == Mirror::kColumns) {
      for (size_t y = 0; y < height; ++y) std::reverse(plane + y * width, plane + (y + 1) * width);
    } else {
      for (size_t y = 0; y < height / 2; ++y)
        std::swap_ranges(plane + y * width, plane + (y + 1) * width,
                         plane + (height - 1 - y) * width);
    }
  }
}

class MirrorOp : public PixelOp {
 public:
  MirrorOp(double p, Mirror axis, const std::vector<int64_t>& shape)
      : p_(p),
        axis_(axis),
        planes_(static_cast<size_t>(shape[0])),
        height_(static_cast<size_t>(shape[1])),
        width_(static_cast<size_t>(shape[2])) {}

  Status apply(const SampleInput& input, uint8_t* pixels) const override {
    if (!(input.rng().next_double() < p_)) return Status::ok();
    mirror_planes(pixels, planes_, height_, width_, axis_);
    return Status::ok();
  }

 private:
  const double p_;
  const Mirror axis_;
  const size_t planes_, height_, width_;
};

// The OpSpec of the flip `name` along `axis` (python_class and doc as OpSpec's), its one
// parameter p; a shape other than [C, H, W] is refused in one line naming the field.
inline OpSpec mirror_spec(std::string name, std::string python_class, std::string doc,
                          Mirror axis) {
  OpSpec op;
  op.name = std::move(name);
  op.role = OpRole::kPixel;
  op.python_class = std::move(python_class);
  op.backend = OpBackend::kBoth;
  op.doc = std::move(doc);
  op.params = {ParamSpec::real("p", 0.5, "probability of a flip").in(0, 1)};
  op.make_pixel = [axis, name = op.name](
                      const Params& params,
                      const PixelContext& context) -> Result<std::shared_ptr<const PixelOp>> {
    if (context.shape.size() != 3)
      return invalid_argument(
          fmt::format("field '{}': {} needs images [C, H, W], not {} dimensions", context.field,
                      name, context.shape.size()));
    return std::shared_ptr<const PixelOp>(
        std::make_shared<MirrorOp>(params.real("p"), axis, context.shape));
  };
  return op;
}

}  // namespace stoker::ops
