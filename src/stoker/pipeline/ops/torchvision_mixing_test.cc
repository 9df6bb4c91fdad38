// mixup, cutmix and mixup_cutmix against torchvision.transforms.v2's MixUp, CutMix and
// RandomChoice([MixUp, CutMix], p), run whole (forward) with their randomness replaced by
// stoker's draws (the Beta's sample, torch.randint's box centre, torch.multinomial's choice):
// images and soft targets equal bit for bit, on a batch of odd size (roll wraps around). Bad
// parameters and labels are one line naming the operation.
#include "stoker/pipeline/ops/torchvision_mixing.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "stoker/testing/batch_reference.h"

namespace stoker {
namespace {

using batch_reference::TestBatch;

constexpr const char* kTorchvisionMixing = R"(
import json, sys
import numpy as np, torch
from torchvision.transforms import v2
d = sys.argv[1]
meta = json.load(open(d + "/meta.json"))
n, shape, nc = meta["n"], meta["shape"], meta["num_classes"]
images = torch.from_numpy(np.fromfile(d + "/images.f32", dtype=np.float32).reshape([n] + shape))
labels = torch.from_numpy(np.fromfile(d + "/labels.i64", dtype=np.int64))
class Drawn:  # the Beta distribution, giving stoker's lam
    def __init__(self, lam): self.lam = lam
    def sample(self, shape=()): return torch.tensor(self.lam, dtype=torch.float32)
ints, choices = [], []
def randint(high, size):
    v = ints.pop(0)
    assert 0 <= v < high, (v, high)
    return torch.tensor([v])
torch.randint = randint
torch.multinomial = lambda p, k: torch.tensor([choices.pop(0)])
for i, c in enumerate(json.load(open(d + "/cases.json"))):
    mix = v2.MixUp(alpha=c["mixup_alpha"], num_classes=nc)
    cut = v2.CutMix(alpha=c["cutmix_alpha"], num_classes=nc)
    mix._dist = cut._dist = Drawn(c["lam"])
    t = {"mixup": mix, "cutmix": cut, "choice": v2.RandomChoice([mix, cut], p=c["p"])}[c["kind"]]
    ints[:] = [c["r_x"], c["r_y"]] if c["cutmix"] else []
    choices[:] = [int(c["cutmix"])]
    image, target = t(images.clone(), labels.clone())
    assert not ints and (c["kind"] != "choice" or not choices)
    image.numpy().tofile(f"{d}/{i}.images")
    target.numpy().tofile(f"{d}/{i}.targets")
)";

struct MixingCase {
  std::string call;  // the operation, as a command line gives it
  std::string kind;  // mixup, cutmix, choice
  double mixup_alpha = 1, cutmix_alpha = 1;
  std::vector<double> p = {0.5, 0.5};
};

TEST(TorchvisionMixingTest, ImagesAndTargetsAreTorchvisionsForTheSameDraws) {
  TestBatch batch(7, {3, 11, 13}, 10, 5);
  const std::vector<MixingCase> cases = {
      {"mixup:alpha=0.2,num_classes=10", "mixup", 0.2, 1},
      {"mixup:alpha=1,num_classes=10", "mixup", 1, 1},
      {"cutmix:alpha=1,num_classes=10", "cutmix", 1, 1},
      {"cutmix:alpha=0.3,num_classes=10", "cutmix", 1, 0.3},
      {"mixup_cutmix:mixup_alpha=0.2,cutmix_alpha=1,num_classes=10", "choice", 0.2, 1},
      {"mixup_cutmix:mixup_alpha=0.8,cutmix_alpha=0.5,num_classes=10,p=[1,3]",
       "choice",
       0.8,
       0.5,
       {0.25, 0.75}},
  };
  constexpr int kBatches = 12;
  testing::TempDir dir;
  batch.write(dir);
  std::ofstream(dir / "meta.json")
      << nlohmann::json{{"n", batch.n}, {"shape", batch.shape}, {"num_classes", batch.num_classes}};
  nlohmann::json reference_cases = nlohmann::json::array();
  std::vector<std::vector<float>> images, targets;
  int cutmixes = 0;
  for (const MixingCase& c : cases) {
    const auto op = batch_reference::make_batch_op(c.call);
    for (int64_t position = 1; position <= kBatches; ++position) {
      std::vector<float> mixed;
      const BatchInput input = batch.input(position * 7, mixed);
      ASSERT_TRUE(op->apply(input).is_ok());
      images.push_back(mixed);
      targets.push_back(batch.targets());
      // The draws the operation made, from the same stream.
      CounterRng rng = input.rng();
      bool cutmix = c.kind == "cutmix";
      if (c.kind == "choice") cutmix = !(rng.next_double() < c.p[0] / (c.p[0] + c.p[1]));
      cutmixes += cutmix;
      nlohmann::json r = {{"kind", c.kind},
                          {"mixup_alpha", c.mixup_alpha},
                          {"cutmix_alpha", c.cutmix_alpha},
                          {"p", c.p},
                          {"cutmix", cutmix}};
      if (cutmix) {
        const ops::CutMixDraw d = ops::draw_cutmix(rng, c.cutmix_alpha, 11, 13);
        r.update({{"lam", d.drawn}, {"r_x", d.r_x}, {"r_y", d.r_y}});
      } else {
        r["lam"] = ops::draw_mixup_lambda(rng, c.mixup_alpha);
      }
      reference_cases.push_back(r);
    }
  }
  EXPECT_GT(cutmixes, 2 * kBatches + 4);  // both kinds drawn by the choices
  EXPECT_LT(cutmixes, 4 * kBatches - 4);
  std::ofstream(dir / "cases.json") << reference_cases.dump();
  ASSERT_TRUE(batch_reference::run_reference(dir, kTorchvisionMixing));
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

TEST(TorchvisionMixingTest, BadParametersAndLabelsAreOneLine) {
  EXPECT_EQ(make_op_call("mixup", {{"alpha", 0.0}}).status().message(),
            "mixup: alpha must be a number above 0, not 0");
  EXPECT_EQ(make_op_call("cutmix", {{"alpha", -1.0}}).status().message(),
            "cutmix: alpha must be a number above 0, not -1");
  EXPECT_EQ(make_op_call("mixup_cutmix", {{"num_classes", int64_t{0}}}).status().message(),
            "mixup_cutmix: num_classes must be a whole number at least 1, not 0");
  const OpCall zeros = parse_op_call("mixup_cutmix:p=[0,0]").value();
  EXPECT_EQ(zeros.op->make_batch(zeros.params).status().message(),
            "mixup_cutmix: p must not be all zeros, not [0, 0]");
  TestBatch batch(4, {1, 2, 2}, 10, 1);
  batch.labels[2] = 10;
  std::vector<float> images;
  EXPECT_EQ(batch_reference::make_batch_op("mixup:num_classes=10")
                ->apply(batch.input(4, images))
                .message(),
            "mixup: label 10 is not in [0, num_classes = 10)");
  const OpCall call = parse_op_call("cutmix:num_classes=10").value();
  EXPECT_EQ(call.op->make_batch(call.params)
                .value()
                ->outputs({{"image", DType::kUint8, {3, 4, 4}}, {"label", DType::kInt64, {}}})
                .status()
                .message(),
            "cutmix needs one float32 image field [C, H, W] (after normalize) and one int64 "
            "label field; the batch has image (uint8 [3, 4, 4]), label (int64 [])");
}

}  // namespace
}  // namespace stoker
