// libFuzzer target for timm's RandAugment config strings (pipeline/ops/timm_rand_augment.h),
// untrusted text from Python's translation, `--augment timm_rand_augment:config=...` and the
// user. For each input:
//   - parse_timm_rand_augment either fails with one line (kInvalidArgument) naming the string,
//     or gives a config of at most 1000 layers and a non-empty list;
//   - a config's draws are made for a sample and every drawn step applied to a [3, 6, 5] and a
//     [1, 4, 7] image, at its clamped level, in each filter.
// Any violation is a __builtin_trap(); ASan and UBSan report the rest. docs/FUZZING.md.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/pipeline/ops/timm_rand_augment.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stoker;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const Result<ops::TimmRandAugmentConfig> parsed = ops::parse_timm_rand_augment(text);
  if (!parsed.is_ok()) {
    const std::string& message = parsed.status().message();
    check(parsed.status().code() == StatusCode::kInvalidArgument);
    check(message.rfind("timm RandAugment config '", 0) == 0);
    check(message.find('\n') == std::string::npos);
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
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{3, 6, 5}, {1, 4, 7}}) {
      std::vector<uint8_t> image(static_cast<size_t>(shape[0] * shape[1] * shape[2]));
      for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 41 + size);
      ops::apply_timm_op(step.op, level, step.negative, static_cast<ops::PilFilter>(filter++ % 3),
                         0.45, std::vector<uint8_t>(static_cast<size_t>(shape[0]), 128),
                         image.data(), shape[0], shape[1], shape[2]);
    }
  }
  return 0;
}
