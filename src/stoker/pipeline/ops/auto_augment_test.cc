// auto_augment against torchvision's AutoAugment on PIL images: each sample's draws
// (augment_policies.h: the sub-policy, which of its operations apply, their signs) handed to
// torchvision's _apply_op in turn with the magnitudes of its own _augmentation_space (10 bins),
// pixel for pixel, over many samples of each policy; fill none, one number, one per channel (on
// "RGB" images); NEAREST, BILINEAR and BICUBIC. With version=v2, torchvision v2's AutoAugment
// itself run with the same draws (pil_policy_v2.h), which also checks v2's tables. The policy
// tables against torchvision's.
#include <map>
#include <sstream>

#include "stoker/testing/pil_policy.h"
#include "stoker/testing/pil_policy_v2.h"

namespace stoker {
namespace {

TEST(AutoAugmentTest, IsTorchvisionsForTheSameDraws) {
  pil_policy_testing::PolicySamples samples;
  for (const std::string policy : {"imagenet", "cifar10", "svhn"}) {
    for (const std::vector<double>& fill :
         std::vector<std::vector<double>>{{}, {128.6}, {10, 200, 300}}) {
      for (const std::string interpolation : {"nearest", "bilinear", "bicubic"}) {
        samples.add("auto_augment",
                    {{"policy", policy}, {"fill", fill}, {"interpolation", interpolation}},
                    ops::PolicySpace::kAutoAugment, 10, fill, 300,
                    [policy](CounterRng& rng) { return ops::draw_auto_augment(rng, policy); });
      }
    }
  }
  std::vector<ops::PolicyOp> every;
  for (int k = 1; k <= 14; ++k) every.push_back(static_cast<ops::PolicyOp>(k));
  samples.expect_torchvision(every);
}

TEST(AutoAugmentTest, WithVersionV2IsTorchvisionV2sForTheSameDraws) {
  pil_policy_testing::V2PolicySamples samples;
  for (const std::string policy : {"imagenet", "cifar10", "svhn"}) {
    for (const std::vector<double>& fill :
         std::vector<std::vector<double>>{{}, {128.6}, {10, 200, 300}}) {
      for (const std::string interpolation : {"nearest", "bilinear", "bicubic"}) {
        samples.add(
            "auto_augment", "AutoAugment",
            {{"policy", policy}, {"fill", fill}, {"interpolation", interpolation}}, 200,
            [policy](CounterRng& rng) {
              const ops::AutoAugmentDraw draw = ops::draw_auto_augment_sub_policy(rng, policy);
              const ops::AutoAugmentSubPolicy& sub =
                  ops::auto_augment_policy(policy)[draw.sub_policy];
              pil_policy_testing::V2PolicySamples::Draws drawn{
                  {{"sub_policy", draw.sub_policy},
                   {"ops", {ops::policy_op_name(sub[0].op), ops::policy_op_name(sub[1].op)}},
                   {"applied", draw.applied},
                   {"negative", draw.negative}},
                  {}};
              for (size_t k = 0; k < 2; ++k) {
                if (draw.applied[k]) drawn.applied.push_back(sub[k].op);
              }
              return drawn;
            });
      }
    }
  }
  std::vector<ops::PolicyOp> every;
  for (int k = 1; k <= 14; ++k) every.push_back(static_cast<ops::PolicyOp>(k));
  samples.expect_torchvision(every);
}

// backend=tensor: v1's _apply_op on the image's uint8 tensor, every policy.
TEST(AutoAugmentTest, WithBackendTensorIsTorchvisionsOnATensor) {
  pil_policy_testing::PolicySamples samples;
  for (const std::string policy : {"imagenet", "cifar10", "svhn"}) {
    for (const std::string interpolation : {"nearest", "bilinear"}) {
      const std::vector<double> fill =
          policy == "svhn" ? std::vector<double>{128.6} : std::vector<double>{};
      samples.add("auto_augment",
                  {{"policy", policy},
                   {"fill", fill},
                   {"interpolation", interpolation},
                   {"backend", std::string("tensor")}},
                  ops::PolicySpace::kAutoAugment, 10, fill, 300,
                  [policy](CounterRng& rng) { return ops::draw_auto_augment(rng, policy); });
    }
  }
  std::vector<ops::PolicyOp> every;
  for (int k = 1; k <= 14; ++k) every.push_back(static_cast<ops::PolicyOp>(k));
  samples.expect_torchvision(every);
}

// Prints torchvision's sub-policies, one a line: "policy name p bin name p bin" (bin -1: None).
constexpr const char* kAutoAugmentPolicyScript = R"(
from torchvision.transforms import autoaugment as A
for policy in ("imagenet", "cifar10", "svhn"):
    for sub in A.AutoAugment()._get_policies(A.AutoAugmentPolicy(policy)):
        print(policy, *[f"{n} {p!r} {-1 if m is None else m}" for n, p, m in sub])
)";

TEST(AutoAugmentTest, PoliciesAreTorchvisions) {
  stoker::testing::TempDir dir;
  std::ofstream(dir / "policies.py") << kAutoAugmentPolicyScript;
  const std::string command =
      std::string(STOKER_PYTHON) + " " + (dir / "policies.py") + " > " + (dir / "policies.txt");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(dir / "policies.txt");
  std::string line;
  std::map<std::string, size_t> row;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string policy;
    fields >> policy;
    const std::vector<ops::AutoAugmentSubPolicy>& table = ops::auto_augment_policy(policy);
    const size_t r = row[policy]++;
    ASSERT_LT(r, table.size()) << line;
    for (const ops::AutoAugmentEntry& entry : table[r]) {
      std::string name;
      double p = 0;
      int bin = 0;
      fields >> name >> p >> bin;
      EXPECT_EQ(name, ops::policy_op_name(entry.op)) << line;
      EXPECT_EQ(p, entry.p) << line;
      EXPECT_EQ(bin, entry.bin) << line;
    }
  }
  EXPECT_EQ(row["imagenet"], 25u);
  EXPECT_EQ(row["cifar10"], 25u);
  EXPECT_EQ(row["svhn"], 25u);
}

TEST(AutoAugmentTest, AppliesEachOperationWithItsProbability) {
  // imagenet's sub-policy 12 is (Equalize 0.0, Equalize 0.8): count over its draws.
  int drawn = 0, first = 0, second = 0;
  for (int i = 0; i < 40000; ++i) {
    CounterRng rng = pil_reference::op_sample(i).rng();
    CounterRng copy = rng;
    if (copy.uniform_below(25) != 12) continue;
    ++drawn;
    const bool applies_first = copy.next_double() < 0.0;
    copy.uniform_below(2);
    const bool applies_second = copy.next_double() < 0.8;
    const std::vector<ops::PolicyStepDraw> steps = ops::draw_auto_augment(rng, "imagenet");
    EXPECT_EQ(steps.size(), static_cast<size_t>(applies_first + applies_second));
    first += applies_first;
    second += applies_second;
  }
  EXPECT_EQ(first, 0);
  EXPECT_NEAR(second, 0.8 * drawn, 0.05 * drawn);
}

}  // namespace
}  // namespace stoker
