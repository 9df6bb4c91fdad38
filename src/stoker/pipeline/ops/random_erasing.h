#pragma once
// The rectangle torchvision's RandomErasing erases, drawn from a stoker stream
// (ops/random_erasing.cc uses it; its test draws the same rectangles to hand them to torchvision's
// erase).

#include <cstdint>

#include "stoker/util/rng.h"

namespace stoker::ops {

struct EraseBox {
  bool found = false;  // false: ten attempts gave no rectangle inside the image; nothing erased
  int64_t top = 0, left = 0, height = 0, width = 0;
};

// torchvision's RandomErasing.make_params for an image of height x width: up to ten attempts of
// an area fraction uniform on [scale_min, scale_max] and an aspect ratio exp(uniform on
// [log ratio_min, log ratio_max]) (float32, as torchvision's tensors), sides rounded half to
// even (Python's round); the first rectangle strictly smaller than the image on both sides is
// placed uniformly. Two draws an attempt, two for the place.
EraseBox draw_erase_box(CounterRng& rng, int64_t height, int64_t width, double scale_min,
                        double scale_max, double ratio_min, double ratio_max);

}  // namespace stoker::ops
