#pragma once
// The random flips' shared operation (ops/random_horizontal_flip.cc, ops/random_vertical_flip.cc):
// a uint8 [C, H, W] image mirrored along one axis with probability p, one draw
// (next_double() < p) from the operation's stream.

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "stoker/pipeline/op_registry.h"

namespace stoker::ops {

enum class Mirror { kColumns, kRows };

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
    for (size_t c = 0; c < planes_; ++c) {
      uint8_t* plane = pixels + c * height_ * width_;
      if (axis_ == Mirror::kColumns) {
        for (size_t y = 0; y < height_; ++y)
          std::reverse(plane + y * width_, plane + (y + 1) * width_);
      } else {
        for (size_t y = 0; y < height_ / 2; ++y)
          std::swap_ranges(plane + y * width_, plane + (y + 1) * width_,
                           plane + (height_ - 1 - y) * width_);
      }
    }
    return Status::ok();
  }

 private:
  const double p_;
  const Mirror axis_;
  const size_t planes_, height_, width_;
};

// The flip for `context`'s images [C, H, W]; kInvalidArgument naming the field and `op` for
// another shape.
inline Result<std::shared_ptr<const PixelOp>> make_mirror(double p, Mirror axis,
                                                          const PixelContext& context,
                                                          const char* op) {
  if (context.shape.size() != 3)
    return invalid_argument(fmt::format("field '{}': {} needs images [C, H, W], not {} dimensions",
                                        context.field, op, context.shape.size()));
  return std::shared_ptr<const PixelOp>(std::make_shared<MirrorOp>(p, axis, context.shape));
}

}  // namespace stoker::ops
