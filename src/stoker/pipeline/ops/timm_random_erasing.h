#pragma once
// timm's RandomErasing (timm/data/random_erasing.py) on one normalised float image: the draws a
// sample makes, for ops/timm_random_erasing.cc and its test. From the operation's own stream,
// in this order:
//   erased = next_double() <= probability (nothing more drawn when not)
//   count  = min_count + uniform_below(max_count - min_count + 1)
//   per box of count, up to ten attempts: area = min_area + (max_area - min_area) * next_double(),
//     log_aspect = log(min_aspect) + (log(max_aspect) - log(min_aspect)) * next_double();
//     h = round(sqrt(area * H * W / count * exp(log_aspect))), w = round(sqrt(area * H * W /
//     count / exp(log_aspect))) (half to even, in doubles as Python's); the first with
//     h < H and w < W is placed at top = uniform_below(H - h + 1), left = uniform_below(W - w +
//     1) and filled: 0 (mode const), one normal value per channel (rand) or per element, in
//     [C, h, w] order (pixel), float32 of standard_normals (normal_draw.h).
// The draws differ from torchvision's RandomErasing's (random_erasing.h: float32 fractions,
// no count), so the two keep their own box draws and share EraseBox.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/pipeline/ops/random_erasing.h"
#include "stoker/util/rng.h"

namespace stoker::ops {

struct TimmErasing {
  double probability = 0.5;
  double min_area = 0.02, max_area = 1.0 / 3.0;
  double min_aspect = 0.3, max_aspect = 1.0 / 0.3;
  std::string mode = "const";  // const, rand, pixel
  int64_t min_count = 1, max_count = 1;
};

// One attempt: the two uniform values timm's random.uniform gives, and the box if it fits.
struct TimmEraseAttempt {
  double area = 0;
  double log_aspect = 0;
  EraseBox box;
  std::vector<float> values;  // the fill of a found box: empty (const), C, or C * h * w
};

struct TimmEraseDraw {
  bool erased = false;
  int64_t count = 0;
  std::vector<TimmEraseAttempt> attempts;  // every box's, in order
};

TimmEraseDraw draw_timm_erasing(CounterRng& rng, const TimmErasing& erasing, int64_t channels,
                                int64_t height, int64_t width);

}  // namespace stoker::ops
