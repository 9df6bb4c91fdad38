// timm_mixup against timm.data.Mixup, called whole with numpy's rand, beta and randint replaced
// by stoker's draws (each randint checked within timm's bounds): images and smoothed soft
// targets equal bit for bit in the batch, pair and elem modes, with MixUp, CutMix, both,
// cutmix_minmax, correct_lam off and prob below 1. Bad parameters are one line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stoker/pipeline/ops/timm_mixing.h"
#include "stoker/testing/batch_reference.h"

namespace stoker {
namespace {

using batch_reference::TestBatch;

constexpr const char* kTimmMixup = R"(
import json, sys
import numpy as np, torch
from timm.data import Mixup
d = sys.argv[1]
meta = json.load(open(d + "/meta.json"))
n, shape = meta["n"], meta["shape"]
images = torch.from_numpy(np.fromfile(d + "/images.f32", dtype=np.float32).reshape([n] + shape))
labels = torch.from_numpy(np.fromfile(d + "/labels.i64", dtype=np.int64))
rands, betas, ints = [], [], []
def rand(*size):
    v = rands.pop(0)
    assert (len(size) == 1) == isinstance(v, list), (size, v)
    return np.array(v) if size else v
def beta(a, b, size=None):
    v = betas.pop(0)
    assert (size is not None) == isinstance(v, list), (size, v)
    return np.array(v) if size is not None else v
def randint(low, high=None, size=None):
    v = ints.pop(0)
    assert low <= v < high, (low, v, high)
    return v
np.random.rand, np.random.beta, np.random.randint = rand, beta, randint
for i, c in enumerate(json.load(open(d + "/cases.json"))):
    rands[:], betas[:], ints[:] = c["rands"], c["betas"], c["ints"]
    image, target = Mixup(**c["args"])(images.clone(), labels.clone())
    assert not rands and not betas and not ints, (rands, betas, ints)
    image.numpy().tofile(f"{d}/{i}.images")
    target.numpy().tofile(f"{d}/{i}.targets")
)";

struct TimmCase {
  std::string call;
  ops::TimmMixParams params;
  double smoothing = 0.1;
};

ops::TimmMixParams timm_params(double mixup_alpha, double cutmix_alpha,
                               ops::TimmMixParams::Mode mode, double prob = 1,
                               std::vector<double> minmax = {}, bool correct_lam = true) {
  ops::TimmMixParams p;
  p.mixup_alpha = mixup_alpha;
  p.cutmix_alpha = minmax.empty() ? cutmix_alpha : 1.0;
  p.cutmix_minmax = std::move(minmax);
  p.prob = prob;
  p.mode = mode;
  p.correct_lam = correct_lam;
  return p;
}

// What timm's numpy calls return for `draws`, in the order it makes them.
nlohmann::json numpy_draws(const ops::TimmMixParams& p,
                           const std::vector<ops::TimmMixDraw>& draws) {
  const bool both = p.mixup_alpha > 0 && p.cutmix_alpha > 0;
  nlohmann::json rands = nlohmann::json::array(), betas = nlohmann::json::array(),
                 ints = nlohmann::json::array();
  for (const ops::TimmMixDraw& d : draws)
    for (int64_t v : d.box_draws) ints.push_back(v);
  if (p.mode == ops::TimmMixParams::kBatch) {
    const ops::TimmMixDraw& d = draws[0];
    rands.push_back(d.u_prob);
    if (d.u_prob < p.prob) {
      if (both) rands.push_back(d.u_switch);
      betas.push_back(d.lam_drawn);
    }
  } else {
    nlohmann::json prob = nlohmann::json::array(), flip = nlohmann::json::array(),
                   cut = nlohmann::json::array(), mix = nlohmann::json::array();
    for (const ops::TimmMixDraw& d : draws) {
      prob.push_back(d.u_prob);
      flip.push_back(d.u_switch);
      cut.push_back(d.use_cutmix ? d.lam_drawn : 0.5);
      mix.push_back(d.use_cutmix ? 0.5 : d.lam_drawn);
    }
    if (both) {
      rands.push_back(flip);
      betas.push_back(cut);
      betas.push_back(mix);
    } else {
      betas.push_back(p.cutmix_alpha > 0 ? cut : mix);
    }
    rands.push_back(prob);
  }
  return {{"rands", rands}, {"betas", betas}, {"ints", ints}};
}

TEST(TimmMixupTest, ImagesAndTargetsAreTimmsForTheSameDraws) {
  using M = ops::TimmMixParams;
  TestBatch batch(8, {3, 10, 12}, 10, 7);
  const std::vector<TimmCase> cases = {
      {"timm_mixup:mixup_alpha=0.2,num_classes=10", timm_params(0.2, 0, M::kBatch)},
      {"timm_mixup:mixup_alpha=0,cutmix_alpha=1,label_smoothing=0,num_classes=10",
       timm_params(0, 1, M::kBatch), 0},
      {"timm_mixup:mixup_alpha=0.8,cutmix_alpha=1,prob=0.7,num_classes=10",
       timm_params(0.8, 1, M::kBatch, 0.7)},
      {"timm_mixup:mixup_alpha=0.5,cutmix_minmax=[0.2,0.8],num_classes=10",
       timm_params(0.5, 0, M::kBatch, 1, {0.2, 0.8})},
      {"timm_mixup:mixup_alpha=0,cutmix_alpha=0.7,correct_lam=false,num_classes=10",
       timm_params(0, 0.7, M::kBatch, 1, {}, false)},
      {"timm_mixup:mixup_alpha=0.8,cutmix_alpha=1,prob=0.8,mode=elem,num_classes=10",
       timm_params(0.8, 1, M::kElem, 0.8)},
      {"timm_mixup:mixup_alpha=0.2,mode=elem,label_smoothing=0.2,num_classes=10",
       timm_params(0.2, 0, M::kElem), 0.2},
      {"timm_mixup:mixup_alpha=0,cutmix_alpha=0.4,correct_lam=false,mode=elem,num_classes=10",
       timm_params(0, 0.4, M::kElem, 1, {}, false)},
      {"timm_mixup:mixup_alpha=0.8,cutmix_alpha=1,prob=0.9,mode=pair,num_classes=10",
       timm_params(0.8, 1, M::kPair, 0.9)},
      {"timm_mixup:mixup_alpha=0,cutmix_minmax=[0.3,0.7],mode=pair,num_classes=10",
       timm_params(0, 0, M::kPair, 1, {0.3, 0.7})},
  };
  testing::TempDir dir;
  batch.write(dir);
  std::ofstream(dir / "meta.json") << nlohmann::json{{"n", batch.n}, {"shape", batch.shape}};
  nlohmann::json reference_cases = nlohmann::json::array();
  std::vector<std::vector<float>> images, targets;
  int boxes = 0, kept = 0;
  for (const TimmCase& c : cases) {
    const auto op = batch_reference::make_batch_op(c.call);
    const M& p = c.params;
    nlohmann::json args = {{"mixup_alpha", p.mixup_alpha},
                           {"cutmix_alpha", p.cutmix_alpha},
                           {"cutmix_minmax", nullptr},
                           {"prob", p.prob},
                           {"switch_prob", p.switch_prob},
                           {"mode", p.mode == M::kBatch  ? "batch"
                                    : p.mode == M::kPair ? "pair"
                                                         : "elem"},
                           {"correct_lam", p.correct_lam},
                           {"label_smoothing", c.smoothing},
                           {"num_classes", batch.num_classes}};
    if (!p.cutmix_minmax.empty()) args["cutmix_minmax"] = p.cutmix_minmax;
    for (int64_t position = 1; position <= 10; ++position) {
      std::vector<float> mixed;
      const BatchInput input = batch.input(position * 8, mixed);
      ASSERT_TRUE(op->apply(input).is_ok());
      images.push_back(mixed);
      targets.push_back(batch.targets());
      CounterRng rng = input.rng();
      const std::vector<ops::TimmMixDraw> draws = ops::draw_timm_mix(rng, p, batch.n, 10, 12);
      for (const ops::TimmMixDraw& d : draws) {
        boxes += d.mix.kind == ops::SampleMix::kPaste;
        kept += d.mix.kind == ops::SampleMix::kKeep;
      }
      nlohmann::json r = numpy_draws(p, draws);
      r["args"] = args;
      reference_cases.push_back(r);
    }
  }
  EXPECT_GT(boxes, 50);
  EXPECT_GT(kept, 5);
  std::ofstream(dir / "cases.json") << reference_cases.dump();
  ASSERT_TRUE(batch_reference::run_reference(dir, kTimmMixup));
  for (size_t i = 0; i < images.size(); ++i) {
    SCOPED_TRACE(reference_cases[i].dump());
    EXPECT_EQ(batch_reference::first_difference(
                  images[i], batch_reference::read_floats(dir / (std::to_string(i) + ".images"))),
              "");
    EXPECT_EQ(batch_reference::first_difference(
                  targets[i], batch_reference::read_floats(dir / (std::to_string(i) + ".targets"))),
              "");
  }
}

TEST(TimmMixupTest, BadParametersAreOneLine) {
  const auto batch_error = [](const std::string& text) {
    const OpCall call = parse_op_call(text).value();
    return call.op->make_batch(call.params).status().message();
  };
  EXPECT_EQ(batch_error("timm_mixup:mixup_alpha=0,cutmix_alpha=0"),
            "timm_mixup: mixup_alpha or cutmix_alpha must be above 0 (or cutmix_minmax given), "
            "not both 0");
  EXPECT_EQ(batch_error("timm_mixup:cutmix_minmax=[0.5]"),
            "timm_mixup: cutmix_minmax must be [] or [min, max], not one number");
  EXPECT_EQ(batch_error("timm_mixup:cutmix_minmax=[0.8,0.2]"),
            "timm_mixup: cutmix_minmax must be [min, max], not [0.8, 0.2]");
  EXPECT_EQ(parse_op_call("timm_mixup:mixup_alpha=-1").status().message(),
            "timm_mixup: mixup_alpha must be a number at least 0, not -1");
  EXPECT_EQ(parse_op_call("timm_mixup:mode=row").status().message(),
            "timm_mixup: mode must be one of batch, pair, elem, not 'row'");
  const auto op = batch_reference::make_batch_op("timm_mixup:cutmix_minmax=[0.4,0.45]");
  EXPECT_EQ(op->outputs({{"image", DType::kFloat32, {3, 8, 8}}, {"label", DType::kInt64, {}}})
                .status()
                .message(),
            "timm_mixup: cutmix_minmax [0.4, 0.45] leaves no box size for images of 8x8");
}

}  // namespace
}  // namespace stoker
