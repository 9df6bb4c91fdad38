// timm_augmix against timm's own AugMix (timm.data.auto_augment, STOKER_PYTHON): for each
// sample, timm's augment_and_mix_transform(config, hparams) is built from the same string,
// checked to hold the operations, magnitude, noise, width, depth and alpha the parser read, and
// run on the PIL image with stoker's draws handed to it (np.random's dirichlet, beta, randint
// and choice give the drawn weights, chains and operations, random's uniform / gauss / random /
// choice each operation's outcomes): pixel for pixel, over many samples and configs (drawn and
// fixed depths, uniform and normal magnitudes, small and large alpha, basic and blended mode),
// every filter and fills.
// Then the parser's errors.
#include "stoker/pipeline/ops/timm_augmix.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/testing/pil_policy.h"
#include "stoker/testing/reference_jobs.h"
#include "stoker/testing/reference_python.h"

namespace stoker {
namespace {

// The reference script of reference_jobs.h: each job's AugMix.
constexpr const char* kTimmAugMixScript = R"(
import math
from timm.data import auto_augment as A
real_np = A.np

class Draws:  # timm's `random`, answering with stoker's outcomes of the step under way
    magnitude, negative, resample = 0.0, False, 0
    def random(self): return 1.0 if self.negative else 0.0
    def gauss(self, mu, sigma): return self.magnitude
    def uniform(self, a, b): return self.magnitude
    def choice(self, seq): return seq[self.resample]

class NpRandom:  # numpy's random, answering with stoker's draws of the sample under way
    def __init__(self, job, by_name):
        self.job, self.by_name, self.chain = job, by_name, -1
    def dirichlet(self, alphas):
        assert len(alphas) == len(self.job["weights"])
        return real_np.array(self.job["weights"], dtype=real_np.float64)
    def beta(self, a, b):
        return self.job["mix"]
    def randint(self, low, high):
        assert (low, high) == (1, 4)
        return len(self.job["chains"][self.chain + 1])
    def choice(self, ops, depth, replace):
        self.chain += 1
        steps = self.job["chains"][self.chain]
        assert replace and depth == len(steps), (depth, steps)
        return [step_of(self.by_name[s["op"]], s) for s in steps]

class Numpy:  # timm's np: numpy, but its random
    def __init__(self, random): self.random = random
    def __getattr__(self, name): return getattr(real_np, name)

draws = Draws()
def step_of(op, s):
    def run(img):
        draws.magnitude, draws.negative = s["magnitude"], s["negative"]
        draws.resample = 1 if s["bicubic"] else 0
        return op(img)
    return run

filters = {"bilinear": PIL.Image.Resampling.BILINEAR, "bicubic": PIL.Image.Resampling.BICUBIC,
           "nearest": PIL.Image.Resampling.NEAREST}
A.random = draws
with open(d + "/out", "wb") as out:
    for job in json.load(open(d + "/jobs.json")):
        fill = [int(v) for v in job["fill"]]
        hparams = dict(translate_const=100, img_mean=fill[0] if len(fill) == 1 else tuple(fill),
                       translate_pct=job["translate_pct"])
        if job["interpolation"] != "random":
            hparams["interpolation"] = filters[job["interpolation"]]
        A.np = real_np
        am = A.augment_and_mix_transform(job["config"], hparams)
        parsed = job["parsed"]
        assert [op.name for op in am.ops] == parsed["ops"], ([op.name for op in am.ops], parsed)
        assert (am.width, max(am.depth, 0), am.alpha, am.blended) == \
            (parsed["w"], parsed["d"], parsed["a"], parsed["b"]), (am, parsed)
        mstd = parsed["mstd"] if parsed["mstd"] >= 0 else math.inf
        for op in am.ops:
            assert (op.prob, op.magnitude, op.magnitude_std, op.magnitude_max) == \
                (1.0, parsed["m"], mstd, None), (op, parsed)
        A.np = Numpy(NpRandom(job, {op.name: op for op in am.ops}))
        y = real_np.asarray(am(images[job["image"]]))
        y = y[None] if y.ndim == 2 else y.transpose(2, 0, 1)
        out.write(real_np.ascontiguousarray(y).tobytes())
)";

struct TimmAugMixCase {
  std::string config;
  std::string interpolation;
  std::vector<double> fill;  // RGB's; "L" images take its first number
  double translate_pct;
};

// Whether this Python's timm mixes a non-square image: before pytorch-image-models#2782's fix
// (the pinned 1.0.31 has it) its AugMix raises on one, and there is nothing to compare with.
bool timm_mixes_non_square_images() {
  const std::string command =
      testing::reference_python() +
      " -c \"from PIL import Image; from timm.data.auto_augment import augment_and_mix_transform"
      " as t; t('augmix-m1-w1', {})(Image.new('RGB', (3, 2)))\" > /dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

TEST(TimmAugMixTest, IsTimmsForTheSameDraws) {
  if (!timm_mixes_non_square_images()) {
    GTEST_SKIP() << "this timm's AugMix fails on non-square images (pytorch-image-models#2782; "
                    "scripts/requirements.txt pins a timm with the fix)";
  }
  const std::vector<pil_reference::TestImage> images = pil_policy_testing::policy_test_images();
  const std::vector<TimmAugMixCase> cases = {
      {"augmix-m3-w3", "random", {124, 116, 104}, 0.3},
      {"augmix-m5-w4-d2", "bicubic", {124, 116, 104}, 0.3},
      {"augmix-m9-w2-d3-mstd0.5-a0.5", "bilinear", {0, 255, 30}, 0.45},
      {"augmix-m10-w1-d1-mstd0", "nearest", {10, 20, 30}, 0.2},
      {"augmix-a3-mstd2-m7-w5-d0-b0-mstd9", "random", {128, 128, 128}, 0.3},
      {"augmix-m3-w3-b1", "random", {124, 116, 104}, 0.3},
      {"augmix-m8-w4-d2-a0.7-b1", "bilinear", {20, 40, 60}, 0.45},
  };
  nlohmann::json jobs = nlohmann::json::array();
  std::vector<reference_jobs::JobResult> results;
  std::array<int, 21> used_ops{};
  nlohmann::json names = nlohmann::json::array();
  for (ops::TimmOp op : ops::timm_augmix_ops()) names.push_back(ops::timm_op_name(op));
  for (const TimmAugMixCase& c : cases) {
    const ops::TimmAugMixConfig config = ops::parse_timm_augmix(c.config).value();
    const nlohmann::json parsed = {
        {"ops", names},
        {"m", config.magnitude},
        {"w", config.width},
        {"d", config.depth},
        {"a", config.alpha},
        {"b", config.blended},
        {"mstd", std::isinf(config.magnitude_std) ? -1.0 : config.magnitude_std}};
    for (int64_t i = 0; i < 100; ++i) {
      const size_t k = static_cast<size_t>(i) % images.size();
      const std::vector<double> fill =
          images[k].shape[0] == 1 ? std::vector<double>{c.fill[0]} : c.fill;
      const SampleInput sample = pil_reference::op_sample(i);
      std::vector<uint8_t> pixels = images[k].pixels;
      ASSERT_TRUE(pil_reference::make_pixel_op("timm_augmix",
                                               {{"config", c.config},
                                                {"interpolation", c.interpolation},
                                                {"fill", fill},
                                                {"translate_pct", c.translate_pct}},
                                               images[k].shape)
                      ->apply(sample, pixels.data())
                      .is_ok());
      results.push_back({k, std::move(pixels),
                         c.config + " " + c.interpolation + " sample " + std::to_string(i)});
      CounterRng rng = sample.rng();
      const ops::TimmAugMixDraw draw = ops::draw_timm_augmix(rng, config);
      nlohmann::json chains = nlohmann::json::array();
      for (const std::vector<ops::TimmStepDraw>& chain : draw.chains) {
        nlohmann::json steps = nlohmann::json::array();
        for (const ops::TimmStepDraw& step : chain) {
          steps.push_back({{"op", ops::timm_op_name(step.op)},
                           {"magnitude", step.magnitude},
                           {"negative", step.negative},
                           {"bicubic", step.bicubic}});
          ++used_ops[static_cast<size_t>(step.op)];
        }
        chains.push_back(steps);
      }
      results.back().label += " mix " + std::to_string(draw.mix) + " chains " + chains.dump();
      jobs.push_back({{"image", k},
                      {"config", c.config},
                      {"interpolation", c.interpolation},
                      {"fill", fill},
                      {"translate_pct", c.translate_pct},
                      {"parsed", parsed},
                      {"weights", draw.weights},
                      {"mix", draw.mix},
                      {"chains", chains}});
    }
  }
  reference_jobs::expect_script_pixels(images, jobs, kTimmAugMixScript, results);
  for (ops::TimmOp op : ops::timm_augmix_ops())
    EXPECT_GT(used_ops[static_cast<size_t>(op)], 0) << ops::timm_op_name(op);
}

TEST(TimmAugMixTest, DrawsAreDirichletAndBeta) {
  // Weights sum to 1 (in float32's rounding), depths in [1, 3] where drawn, the mix in [0, 1]
  // with the Beta(1, 1)'s mean 1/2 and each weight Dirichlet(1, 1, 1)'s 1/3.
  const ops::TimmAugMixConfig config = ops::parse_timm_augmix("augmix-m3-w3").value();
  double mix_sum = 0, first_sum = 0;
  std::array<int, 4> depths{};
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    CounterRng rng(5, static_cast<uint64_t>(i));
    const ops::TimmAugMixDraw draw = ops::draw_timm_augmix(rng, config);
    ASSERT_EQ(draw.weights.size(), 3u);
    EXPECT_NEAR(draw.weights[0] + draw.weights[1] + draw.weights[2], 1.0, 1e-6);
    EXPECT_GE(draw.mix, 0.0f);
    EXPECT_LE(draw.mix, 1.0f);
    mix_sum += draw.mix;
    first_sum += draw.weights[0];
    for (const auto& chain : draw.chains) {
      ASSERT_TRUE(chain.size() >= 1 && chain.size() <= 3);
      ++depths[chain.size()];
    }
  }
  EXPECT_NEAR(mix_sum / n, 0.5, 0.02);
  EXPECT_NEAR(first_sum / n, 1.0 / 3.0, 0.015);
  for (int d = 1; d <= 3; ++d) EXPECT_NEAR(depths[d] / (3.0 * n), 1.0 / 3.0, 0.02) << d;
}

TEST(TimmAugMixTest, ParsesTimmsGrammar) {
  const ops::TimmAugMixConfig c = ops::parse_timm_augmix("augmix-m5-w4-d2").value();
  EXPECT_EQ(c.magnitude, 5);
  EXPECT_EQ(c.width, 4);
  EXPECT_EQ(c.depth, 2);
  EXPECT_EQ(c.alpha, 1);
  EXPECT_TRUE(std::isinf(c.magnitude_std));
  const ops::TimmAugMixConfig defaults = ops::parse_timm_augmix("augmix").value();
  EXPECT_EQ(defaults.magnitude, 3);
  EXPECT_EQ(defaults.width, 3);
  EXPECT_EQ(defaults.depth, 0);
  EXPECT_FALSE(defaults.blended);
  EXPECT_TRUE(ops::parse_timm_augmix("augmix-b2").value().blended);
  EXPECT_FALSE(ops::parse_timm_augmix("augmix-b1-b0").value().blended);
  // As timm: the first mstd is kept, the last m, w, d, a; mstd over 100 stays a deviation.
  const ops::TimmAugMixConfig repeated =
      ops::parse_timm_augmix("augmix-mstd0-mstd3-m3-m4-a2-a0.5-b0-w1-w2").value();
  EXPECT_EQ(repeated.magnitude_std, 0);
  EXPECT_EQ(repeated.magnitude, 4);
  EXPECT_EQ(repeated.alpha, 0.5);
  EXPECT_EQ(repeated.width, 2);
  EXPECT_EQ(ops::parse_timm_augmix("augmix-mstd200").value().magnitude_std, 200);
}

TEST(TimmAugMixTest, BadConfigsAreOneLineNamingThePart) {
  const auto error = [](const std::string& config) {
    const Result<ops::TimmAugMixConfig> parsed = ops::parse_timm_augmix(config);
    EXPECT_FALSE(parsed.is_ok()) << config;
    return parsed.is_ok() ? std::string() : parsed.status().message();
  };
  EXPECT_EQ(error("rand-m9"), "timm AugMix config 'rand-m9': must start with 'augmix'");
  EXPECT_EQ(error("augmix-m3-x3"),
            "timm AugMix config 'augmix-m3-x3': unknown section 'x3' (m, w, d, a, b, mstd)");
  EXPECT_EQ(error("augmix-w2.5"),
            "timm AugMix config 'augmix-w2.5': w '2.5' is not a whole number of at most 9 "
            "digits");
  EXPECT_EQ(error("augmix-a1e999"),
            "timm AugMix config 'augmix-a1e999': a '1e999' is not a number");
  EXPECT_EQ(error("augmix-a0"), "timm AugMix config 'augmix-a0': a0 is not in [0.001, 1000]");
  EXPECT_EQ(error("augmix--m3"),
            "timm AugMix config 'augmix--m3': section '' is not a key and a number (m3, w3, d0, "
            "a1, b0, mstd0.5)");
  EXPECT_EQ(error("augmix-w0"), "timm AugMix config 'augmix-w0': w0 is not in [1, 64]");
  EXPECT_EQ(error("augmix-w65"), "timm AugMix config 'augmix-w65': w65 is not in [1, 64]");
  EXPECT_EQ(error("augmix-d65"), "timm AugMix config 'augmix-d65': d65 is over 64");
  // Through the registry and the factory: the field, the operation, the string.
  const OpCall call = make_op_call("timm_augmix", {{"config", std::string("augmix-q1")}}).value();
  const auto made = call.op->make_pixel(call.params, {"image", {3, 8, 8}});
  ASSERT_FALSE(made.is_ok());
  EXPECT_EQ(made.status().message(),
            "field 'image': timm_augmix: timm AugMix config 'augmix-q1': unknown section 'q1' "
            "(m, w, d, a, b, mstd)");
  const OpCall wrong_fill =
      make_op_call("timm_augmix", {{"fill", std::vector<double>{1, 2}}}).value();
  EXPECT_EQ(wrong_fill.op->make_pixel(wrong_fill.params, {"image", {3, 8, 8}}).status().message(),
            "field 'image': timm_augmix: fill has 2 numbers; give one or one per channel (3)");
}

}  // namespace
}  // namespace stoker
