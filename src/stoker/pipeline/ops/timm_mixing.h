#pragma once
// timm.data.Mixup's draws (ops/timm_mixup.cc), from the batch's stream (batch_transform.h): one
// decision for the whole batch (mode batch), or one per element (elem) or per pair (pair:
// element i and n - 1 - i, i < n / 2), each in this order:
//   u_prob = next_double()              it mixes when u_prob < prob
//   u_switch = next_double()            with both alphas above 0: CutMix when u_switch <
//                                       switch_prob (with one: that one)
//   lam ~ Beta(alpha, alpha)            of the chosen one (cutmix_minmax: alpha 1, as timm's);
//                                       elem and pair round it to float32, as timm's arrays
//   the box, when it mixes by CutMix and lam != 1: as timm's rand_bbox (centre cy uniform in
//   [0, H), then cx in [0, W); sides int(H sqrt(1 - lam)), in float32 for elem and pair as numpy
//   computes them) or rand_bbox_minmax (cut_h, cut_w, then top and left, each uniform); lam
//   then 1 - box area / (H W) when correct_lam or cutmix_minmax
// A decision that does not mix, or whose lam is 1, leaves its samples as they are (their targets
// unmixed). Samples are mixed with their mirror (flip(0)); the targets are timm's mixup_target,
// smoothed: off = label_smoothing / num_classes, on = 1 - label_smoothing + off. timm asserts an
// even batch; here an odd batch's middle sample mixes with itself (batch and elem) or stays as it
// is (pair).

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/pipeline/ops/batch_mixing.h"
#include "stoker/util/rng.h"

namespace stoker::ops {

struct TimmMixParams {
  double mixup_alpha = 1;
  double cutmix_alpha = 0;
  std::vector<double> cutmix_minmax;  // empty, or [min, max]
  double prob = 1;
  double switch_prob = 0.5;
  enum Mode { kBatch, kPair, kElem } mode = kBatch;
  bool correct_lam = true;
};

// One decision and the draws behind it (what a test hands timm's numpy calls).
struct TimmMixDraw {
  double u_prob = 0;
  double u_switch = 0;  // drawn with both alphas only
  bool use_cutmix = false;
  double lam_drawn = 1;            // the Beta draw (float32-rounded for elem and pair)
  std::vector<int64_t> box_draws;  // timm's randint results, in its order
  SampleMix mix;                   // kKeep when lam is 1
};

// The decisions of a batch of n samples of height x width: 1 (batch), n / 2 (pair) or n (elem).
std::vector<TimmMixDraw> draw_timm_mix(CounterRng& rng, const TimmMixParams& params, int64_t n,
                                       int64_t height, int64_t width);

}  // namespace stoker::ops
