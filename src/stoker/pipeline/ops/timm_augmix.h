#pragma once
// timm's AugMix (timm/data/auto_augment.py, timm 1.0: augment_and_mix_transform and
// AugMixAugment, its basic mode): its config string and the draws a sample makes, for
// ops/timm_augmix.cc, its test and the fuzz target.
//
// The config: "augmix" then sections joined by "-", in any order: m<int> severity, the
// operations' magnitude (3), w<int> width, the chains (3, 1 to 64), d<int> depth, the
// operations per chain (0: 1 to 3 drawn per chain, timm's -1; at most 64), a<float> alpha of
// the Dirichlet and Beta draws (1, 0.001 to 1000), b<int> blended mode if not 0, mstd<float>
// magnitude noise (the first one kept; none: uniform on [0, m]).
// Stricter than timm: a section timm would skip or answer with an assertion is an error
// naming it; numbers are plain (timm_config_numbers.h).
//
// The operations: timm's _AUGMIX_TRANSFORMS (timm_rand_augment.h's, probability 1), each at
// its magnitude clamped to [0, 10]. The mix, as AugMixAugment._apply_basic in float32: mixed
// = sum over chains of weight * chain's image (each product and sum rounded), clipped to
// [0, 255] and truncated, then Image.blend(image, mixed, m). Blended (_apply_blended): the
// weights times m, then from the last chain to the first alpha = w / c, c *= 1 - alpha (c
// from 1, all float32), and the image Image.blend(image, chain's image, alpha) chain after
// chain.
//
// A sample's draws, from the operation's own stream: the weights dirichlet_draw(alpha, w)
// (beta_draw.h) in float32; m = float32 of beta_draw(alpha, alpha); then per chain its depth
// (d, else 1 + uniform_below(3)) and per
// operation uniform_below(13) and draw_timm_step_outcome (timm_rand_augment.h).

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/pipeline/ops/timm_rand_augment.h"
#include "stoker/util/rng.h"
#include "stoker/util/status.h"

namespace stoker::ops {

struct TimmAugMixConfig {
  double magnitude = 3;
  int64_t width = 3;
  int64_t depth = 0;  // 0: drawn per chain
  double alpha = 1;
  double magnitude_std = 0;  // infinite: uniform on [0, magnitude]
  bool blended = false;
};

// `config` read; kInvalidArgument "timm AugMix config 'TEXT': ..." naming the bad part.
Result<TimmAugMixConfig> parse_timm_augmix(const std::string& config);

// timm's _AUGMIX_TRANSFORMS, in its order.
const std::vector<TimmOp>& timm_augmix_ops();

struct TimmAugMixDraw {
  bool blended = false;
  std::vector<float> weights;  // one per chain
  float mix = 0;               // the blend of the mixed image into the original
  std::vector<std::vector<TimmStepDraw>> chains;
};

TimmAugMixDraw draw_timm_augmix(CounterRng& rng, const TimmAugMixConfig& config);

// The drawn mix of the image [channels, height, width] in place.
void apply_timm_augmix(const TimmAugMixDraw& draw, const TimmOpSettings& settings, uint8_t* pixels,
                       int64_t channels, int64_t height, int64_t width);

}  // namespace stoker::ops
