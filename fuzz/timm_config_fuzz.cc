// libFuzzer target for timm's RandAugment and AugMix config strings
// (pipeline/ops/timm_rand_augment.h, timm_augmix.h), untrusted text from Python's translation,
// `--augment timm_rand_augment:config=...` (timm_augmix) and the user. For each input:
//   - parse_timm_rand_augment either fails with one line (kInvalidArgument) naming the string,
//     or gives a config of at most 1000 layers and a non-empty list;
//   - a config's draws are made for a sample and every drawn step applied to a [3, 6, 5] and a
//     [1, 4, 7] image, at its clamped level, in each filter;
//   - parse_timm_augmix either fails with one line naming the string, or gives 1 to 64 chains of
//     at most 64 operations, whose draws (weights summing to 1, a mix in [0, 1]) are mixed into
//     both images in each filter.
// Any violation is a __builtin_trap(); ASan and UBSan report the rest. docs/FUZZING.md.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/pipeline/ops/timm_augmix.h"
#include "stoker/pipeline/ops/timm_rand_augment.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// A failed parse: one line, kInvalidArgument, starting `prefix`.
template <typename T>
void check_failure(const stoker::Result<T>& parsed, const std::string& prefix) {
  const std::string& message = parsed.status().message();
  check(parsed.status().code() == stoker::StatusCode::kInvalidArgument);
  check(message.rfind(prefix, 0) == 0);
  check(message.find('\n') == std::string::npos);
}

const std::vector<std::vector<int64_t>> kShapes = {{3, 6, 5}, {1, 4, 7}};

std::vector<uint8_t> fuzz_image(const std::vector<int64_t>& shape, size_t seed) {
  std::vector<uint8_t> image(static_cast<size_t>(shape[0] * shape[1] * shape[2]));
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 41 + seed);
  return image;
}

void fuzz_augmix(const std::string& text) {
  using namespace stoker;
  const Result<ops::TimmAugMixConfig> parsed = ops::parse_timm_augmix(text);
  if (!parsed.is_ok()) return check_failure(parsed, "timm AugMix config '");
  const ops::TimmAugMixConfig& config = parsed.value();
  check(config.width >= 1 && config.width <= 64 && config.depth <= 64);
  CounterRng rng(text.size(), 9);
  const ops::TimmAugMixDraw draw = ops::draw_timm_augmix(rng, config);
  check(static_cast<int64_t>(draw.chains.size()) == config.width);
  float sum = 0;
  for (float w : draw.weights) sum += w;
  check(std::abs(sum - 1.0f) < 1e-4f && draw.mix >= 0.0f && draw.mix <= 1.0f);
  for (int filter = 0; filter < 4; ++filter) {
    for (const std::vector<int64_t>& shape : kShapes) {
      ops::TimmOpSettings settings;
      if (filter < 3) settings.filter = static_cast<ops::PilFilter>(filter);
      settings.fill.assign(static_cast<size_t>(shape[0]), 128);
      std::vector<uint8_t> image = fuzz_image(shape, text.size());
      ops::apply_timm_augmix(draw, settings, image.data(), shape[0], shape[1], shape[2]);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz_augmix(text);
  const Result<ops::TimmRandAugmentConfig> parsed = ops::parse_timm_rand_augment(text);
  if (!parsed.is_ok()) {
    check_failure(parsed, "timm RandAugment config '");
    return 0;
  }
  const ops::TimmRandAugmentConfig& config = parsed.value();
  check(!config.ops.empty() && config.num_layers >= 0 && config.num_layers <= 1000);
  CounterRng rng(size, 7);
  const double upper = config.magnitude_max != 0 ? config.magnitude_max : 10.0;
  const std::vector<ops::TimmStepDraw> steps = ops::draw_timm_rand_augment(rng, config);
  check(static_cast<int64_t>(steps.size()) == config.num_layers);
  int filter = 0;
  for (const ops::TimmStepDraw& step : steps) {
    const double level = std::max(0.0, std::min(step.magnitude, upper));
    for (const std::vector<int64_t>& shape : kShapes) {
      std::vector<uint8_t> image = fuzz_image(shape, size);
      ops::apply_timm_op(step.op, level, step.negative, static_cast<ops::PilFilter>(filter++ % 3),
                         0.45, std::vector<uint8_t>(static_cast<size_t>(shape[0]), 128),
                         image.data(), shape[0], shape[1], shape[2]);
    }
  }
  return 0;
}
