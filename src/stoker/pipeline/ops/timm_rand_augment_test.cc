// timm_rand_augment against timm's own RandAugment (timm.data.auto_augment, STOKER_PYTHON):
// for each sample, timm's rand_augment_transform(config, hparams) is built from the same
// string, checked to hold the operations, probability, magnitude, noise and bound the parser
// read, and run on the PIL image with stoker's draws handed to it (np.random.choice gives the
// drawn operations, random.random / gauss / uniform / choice the drawn outcomes): pixel for
// pixel, over many samples and configs (standard, increasing, weighted and 3a lists, noise,
// uniform magnitudes, mmax past 10, p below and at 1), every filter and fills. Then the
// parser's errors.
#include "stoker/pipeline/ops/timm_rand_augment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/pil_policy.h"
#include "stoker/testing/pil_reference.h"
#include "stoker/testing/reference_jobs.h"

namespace stoker {
namespace {

using ops::TimmOp;

// The reference script of reference_jobs.h: each job's RandAugment.
constexpr const char* kTimmScript = R"(
import math
from types import SimpleNamespace
from timm.data import auto_augment as A

class Draws:  # timm's `random`, answering with stoker's outcomes of the step under way
    randoms, magnitude, resample = [], 0.0, 0
    def random(self): return self.randoms.pop(0)
    def gauss(self, mu, sigma): return self.magnitude
    def uniform(self, a, b): return self.magnitude
    def choice(self, seq): return seq[self.resample]

draws = Draws()
real_np = A.np
filters = {"bilinear": PIL.Image.Resampling.BILINEAR, "bicubic": PIL.Image.Resampling.BICUBIC,
           "nearest": PIL.Image.Resampling.NEAREST}
with open(d + "/out", "wb") as out:
    for job in json.load(open(d + "/jobs.json")):
        fill = [int(v) for v in job["fill"]]
        hparams = dict(translate_const=100, img_mean=fill[0] if len(fill) == 1 else tuple(fill),
                       translate_pct=job["translate_pct"])
        if job["interpolation"] != "random":
            hparams["interpolation"] = filters[job["interpolation"]]
        A.np = real_np
        ra = A.rand_augment_transform(job["config"], hparams)
        parsed = job["parsed"]
        assert [op.name for op in ra.ops] == parsed["ops"], ([op.name for op in ra.ops], parsed)
        assert ra.num_layers == parsed["n"], (ra.num_layers, parsed)
        for op in ra.ops:
            assert op.prob == parsed["p"] and op.magnitude == parsed["m"], (op, parsed)
            mstd = parsed["mstd"] if parsed["mstd"] >= 0 else math.inf
            assert op.magnitude_std == mstd and (op.magnitude_max or 0) == parsed["mmax"], op
        if parsed["weights"]:
            assert np.allclose(ra.choice_weights, parsed["weights"], rtol=0, atol=1e-15)
        else:
            assert ra.choice_weights is None
        by_name = {op.name: op for op in ra.ops}

        def step_of(name, s):
            op = by_name[name]
            def run(img):
                draws.randoms = ([0.0 if s["applied"] else 1.0] if op.prob < 1.0 else []) + \
                    [1.0 if s["negative"] else 0.0]
                draws.magnitude = s["magnitude"]
                draws.resample = 1 if s["bicubic"] else 0
                return op(img)
            return run

        def choice(ops, n, replace=True, p=None):
            assert n == len(job["steps"]) and replace == (p is None), (n, replace)
            return [step_of(s["op"], s) for s in job["steps"]]
        A.np = SimpleNamespace(random=SimpleNamespace(choice=choice))
        A.random = draws
        y = np.asarray(ra(images[job["image"]]))
        y = y[None] if y.ndim == 2 else y.transpose(2, 0, 1)
        out.write(np.ascontiguousarray(y).tobytes())
)";

struct TimmCase {
  std::string config;
  std::string interpolation;
  std::vector<double> fill;  // RGB's; "L" images take its first number
  double translate_pct;
};

TEST(TimmRandAugmentTest, IsTimmsForTheSameDraws) {
  const std::vector<pil_reference::TestImage> images = pil_policy_testing::policy_test_images();
  const std::vector<TimmCase> cases = {
      {"rand-m9-mstd0.5-inc1", "random", {124, 116, 104}, 0.45},
      {"rand-m9-mstd0.5", "bicubic", {124, 116, 104}, 0.45},
      {"rand-m7-n3-p1", "bilinear", {0, 255, 30}, 0.3},
      {"rand-m15-mmax20-n2-p0.8-inc1", "random", {128, 128, 128}, 0.45},
      {"rand-m23-mmax30-n3-p0.9", "nearest", {10, 20, 30}, 0.2},
      {"rand-m9-mstd101-n3", "random", {124, 116, 104}, 0.45},
      {"rand-m10-n4-p0.7-tweights", "random", {124, 116, 104}, 0.45},
      {"rand-inc1-n1-p0.3-mstd2-m6", "bicubic", {200, 100, 50}, 0.6},
      {"rand-m9-mstd0.5-n3-p0.9-t3a", "random", {124, 116, 104}, 0.45},
      {"rand-m12-mmax15-mstd101-t3a", "bilinear", {124, 116, 104}, 0.45},
      {"rand-m7-n4-mstd1-t3aw", "random", {124, 116, 104}, 0.45},
  };
  nlohmann::json jobs = nlohmann::json::array();
  std::vector<reference_jobs::JobResult> results;
  std::array<int, 23> applied_ops{};
  for (const TimmCase& c : cases) {
    const ops::TimmRandAugmentConfig config = ops::parse_timm_rand_augment(c.config).value();
    nlohmann::json names = nlohmann::json::array();
    for (TimmOp op : config.ops) names.push_back(ops::timm_op_name(op));
    const nlohmann::json parsed = {
        {"ops", names},
        {"n", config.num_layers},
        {"p", config.prob},
        {"m", config.magnitude},
        {"mstd", std::isinf(config.magnitude_std) ? -1.0 : config.magnitude_std},
        {"mmax", config.magnitude_max},
        {"weights", config.weights}};
    for (int64_t i = 0; i < 150; ++i) {
      const size_t k = static_cast<size_t>(i) % images.size();
      const std::vector<double> fill =
          images[k].shape[0] == 1 ? std::vector<double>{c.fill[0]} : c.fill;
      const SampleInput sample = pil_reference::op_sample(i);
      std::vector<uint8_t> pixels = images[k].pixels;
      ASSERT_TRUE(pil_reference::make_pixel_op("timm_rand_augment",
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
      nlohmann::json steps = nlohmann::json::array();
      for (const ops::TimmStepDraw& step : ops::draw_timm_rand_augment(rng, config)) {
        steps.push_back({{"op", ops::timm_op_name(step.op)},
                         {"applied", step.applied},
                         {"magnitude", step.magnitude},
                         {"negative", step.negative},
                         {"bicubic", step.bicubic}});
        if (step.applied) ++applied_ops[static_cast<size_t>(step.op)];
        results.back().label += std::string(" ") + ops::timm_op_name(step.op) +
                                (step.applied ? "" : "(skipped)") + (step.negative ? "-" : "+") +
                                (step.bicubic ? "c" : "l") + std::to_string(step.magnitude);
      }
      jobs.push_back({{"image", k},
                      {"config", c.config},
                      {"interpolation", c.interpolation},
                      {"fill", fill},
                      {"translate_pct", c.translate_pct},
                      {"parsed", parsed},
                      {"steps", steps}});
    }
  }
  reference_jobs::expect_script_pixels(images, jobs, kTimmScript, results);
  for (size_t op = 0; op < applied_ops.size(); ++op) {
    EXPECT_GT(applied_ops[op], 0) << ops::timm_op_name(static_cast<TimmOp>(op));
  }
}

TEST(TimmRandAugmentTest, ParsesTimmsGrammar) {
  const ops::TimmRandAugmentConfig c = ops::parse_timm_rand_augment("rand-m9-mstd0.5-inc1").value();
  EXPECT_EQ(c.magnitude, 9);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.prob, 0.5);
  EXPECT_EQ(c.magnitude_std, 0.5);
  EXPECT_EQ(c.ops.size(), 15u);
  EXPECT_EQ(c.ops[4], TimmOp::kPosterizeIncreasing);
  EXPECT_TRUE(c.weights.empty());
  const ops::TimmRandAugmentConfig defaults = ops::parse_timm_rand_augment("rand").value();
  EXPECT_EQ(defaults.magnitude, 10);
  EXPECT_EQ(defaults.ops[4], TimmOp::kPosterize);
  // As timm: the first mstd and mmax are kept, the last m, n, p, inc; an unknown list name is
  // the default list; mstd over 100 is uniform sampling.
  const ops::TimmRandAugmentConfig repeated =
      ops::parse_timm_rand_augment("rand-mstd0-mstd3-mmax0-mmax20-m3-m4-tfoo-inc1-mstd200").value();
  EXPECT_EQ(repeated.magnitude_std, 0);
  EXPECT_EQ(repeated.magnitude_max, 0);
  EXPECT_EQ(repeated.magnitude, 4);
  EXPECT_EQ(repeated.ops[4], TimmOp::kPosterizeIncreasing);
  EXPECT_TRUE(std::isinf(ops::parse_timm_rand_augment("rand-mstd101").value().magnitude_std));
  const ops::TimmRandAugmentConfig three_a = ops::parse_timm_rand_augment("rand-t3a").value();
  EXPECT_EQ(three_a.ops, (std::vector<TimmOp>{TimmOp::kSolarizeIncreasing, TimmOp::kDesaturate,
                                              TimmOp::kGaussianBlur}));
  EXPECT_TRUE(three_a.weights.empty());
  EXPECT_EQ(ops::parse_timm_rand_augment("rand-t3aw").value().weights.size(), 14u);
}

TEST(TimmRandAugmentTest, BadConfigsAreOneLineNamingThePart) {
  const auto error = [](const std::string& config) {
    const Result<ops::TimmRandAugmentConfig> parsed = ops::parse_timm_rand_augment(config);
    EXPECT_FALSE(parsed.is_ok()) << config;
    return parsed.is_ok() ? std::string() : parsed.status().message();
  };
  EXPECT_EQ(error("augmix-m5"), "timm RandAugment config 'augmix-m5': must start with 'rand'");
  EXPECT_EQ(error("rand-m9-x3"),
            "timm RandAugment config 'rand-m9-x3': unknown section 'x3' (m, n, p, mstd, mmax, "
            "inc, t<list>)");
  EXPECT_EQ(error("rand-m9.5"),
            "timm RandAugment config 'rand-m9.5': m '9.5' is not a whole number of at most 9 "
            "digits");
  EXPECT_EQ(error("rand-p0.5e"), "timm RandAugment config 'rand-p0.5e': p '0.5e' is not a number");
  EXPECT_EQ(error("rand-p1e999"),
            "timm RandAugment config 'rand-p1e999': p '1e999' is not a number");
  EXPECT_EQ(error("rand--m9"),
            "timm RandAugment config 'rand--m9': section '' is not a key and a number (m9, n2, "
            "p0.5, mstd0.5, mmax10, inc1, t<list>)");
  EXPECT_EQ(error("rand-inc"),
            "timm RandAugment config 'rand-inc': section 'inc' is not a key and a number (m9, "
            "n2, p0.5, mstd0.5, mmax10, inc1, t<list>)");
  EXPECT_EQ(error("rand-n15-t3aw"),
            "timm RandAugment config 'rand-n15-t3aw': n15 is more than the 14 operations "
            "t3aw draws without replacement");
  EXPECT_EQ(error("rand-n16-tweights"),
            "timm RandAugment config 'rand-n16-tweights': n16 is more than the 15 operations "
            "tweights draws without replacement");
  EXPECT_EQ(error("rand-n1001"), "timm RandAugment config 'rand-n1001': n1001 is over 1000");
  EXPECT_EQ(error("rand-m1234567890"),
            "timm RandAugment config 'rand-m1234567890': m '1234567890' is not a whole number "
            "of at most 9 digits");
  // Through the registry and the factory: the field, the operation, the string.
  const OpCall call =
      make_op_call("timm_rand_augment", {{"config", std::string("rand-q1")}}).value();
  const auto made = call.op->make_pixel(call.params, {"image", {3, 8, 8}});
  ASSERT_FALSE(made.is_ok());
  EXPECT_EQ(made.status().message(),
            "field 'image': timm_rand_augment: timm RandAugment config 'rand-q1': unknown "
            "section 'q1' (m, n, p, mstd, mmax, inc, t<list>)");
  EXPECT_EQ(pil_reference::call_error("timm_rand_augment", {{"config", std::string("rand,m9")}}),
            "timm_rand_augment: config must be text of up to 256 printable characters but , ; [ ], "
            "not 'rand,m9'");
  const OpCall wrong_fill =
      make_op_call("timm_rand_augment", {{"fill", std::vector<double>{1, 2}}}).value();
  EXPECT_EQ(wrong_fill.op->make_pixel(wrong_fill.params, {"image", {3, 8, 8}}).status().message(),
            "field 'image': timm_rand_augment: fill has 2 numbers; give one or one per channel "
            "(3)");
}

}  // namespace
}  // namespace stoker
