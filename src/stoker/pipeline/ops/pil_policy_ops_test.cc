// pil_policy_ops.h against torchvision's _apply_op on PIL images (NEAREST), and transforms v2's
// _apply_image_or_video_transform with its classes' magnitudes, pixel for pixel: every operation
// over every magnitude of each policy's space (TrivialAugmentWide's and RandAugment's 31 bins,
// AutoAugment's 10), both signs, on noise and smooth images, "RGB" and "L", odd and square sizes;
// the geometric ones NEAREST, BILINEAR and BICUBIC, with fill None and one per channel (some past
// [0, 255], some fractional). The magnitude tables against torchvision's (v1's and v2's) for 2 to
// 80 bins.
#include <algorithm>
#include <map>

#include "stoker/testing/pil_policy.h"

namespace stoker {
namespace {

using ops::PolicyOp;
using ops::PolicySpace;
using ops::PolicyVersion;
using pil_policy_testing::PolicyJob;

// Every magnitude of `op` in every space that has it, of both versions, each sign, on every
// image; the geometric ones in the three interpolations and with three fills.
std::vector<PolicyJob> pil_policy_ops_jobs(PolicyOp op,
                                           const std::vector<pil_reference::TestImage>& images) {
  std::vector<PolicyJob> jobs;
  for (PolicySpace space :
       {PolicySpace::kTrivialAugmentWide, PolicySpace::kRandAugment, PolicySpace::kAutoAugment}) {
    for (PolicyVersion version : {PolicyVersion::kV1, PolicyVersion::kV2}) {
      if (op == PolicyOp::kInvert && space != PolicySpace::kAutoAugment) continue;
      if (op == PolicyOp::kIdentity && space == PolicySpace::kAutoAugment) continue;
      const int64_t bins = space == PolicySpace::kAutoAugment ? 10 : 31;
      for (size_t i = 0; i < images.size(); ++i) {
        const int64_t channels = images[i].shape[0];
        std::vector<std::vector<double>> fills = {{}};
        if (pil_policy_testing::geometric(op)) {
          fills.push_back(channels == 1 ? std::vector<double>{77.9}
                                        : std::vector<double>{10, 200.7, 300});
          fills.push_back({-3});
        }
        const bool scalar = ops::policy_magnitudes(space, op, bins, 8, 8, version).empty();
        for (int64_t bin = 0; bin < (scalar ? 1 : bins); ++bin) {
          for (bool negative : {false, true}) {
            if (negative && !ops::policy_op_signed(op)) continue;
            for (const std::vector<double>& fill : fills) {
              jobs.push_back({i, space, bins, fill, {{op, bin, negative}}, "nearest", version});
              if (pil_policy_testing::geometric(op)) {
                for (const char* filter : {"bilinear", "bicubic"})
                  jobs.push_back({i, space, bins, fill, {{op, bin, negative}}, filter, version});
              }
            }
          }
        }
      }
    }
  }
  return jobs;
}

class PilPolicyOpsTest : public ::testing::TestWithParam<PolicyOp> {};

TEST_P(PilPolicyOpsTest, IsTorchvisionsApplyOpOnPilImages) {
  const PolicyOp op = GetParam();
  const std::vector<pil_reference::TestImage> images = pil_policy_testing::policy_test_images();
  const std::vector<PolicyJob> jobs = pil_policy_ops_jobs(op, images);
  const std::vector<std::vector<uint8_t>> reference =
      pil_policy_testing::torchvision_policy_pixels(images, jobs);
  ASSERT_EQ(reference.size(), jobs.size());
  size_t compared = 0;
  size_t changed = 0;
  int failures = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const PolicyJob& job = jobs[j];
    ++compared;
    const std::vector<uint8_t>& want = reference[j];
    changed += want != images[job.image].pixels;
    const std::vector<uint8_t> mine = pil_policy_testing::stoker_policy_pixels(images, job);
    ASSERT_EQ(mine.size(), want.size());
    const auto [at, theirs] = std::mismatch(mine.begin(), mine.end(), want.begin());
    if (at != mine.end() && ++failures <= 5) {
      ADD_FAILURE() << ops::policy_op_name(op) << " space "
                    << pil_policy_testing::space_name(job.space)
                    << (job.version == PolicyVersion::kV2 ? " v2" : " v1") << " bin "
                    << job.steps[0].bin << (job.steps[0].negative ? " negative" : "") << " image "
                    << job.image << " fill " << job.fill.size() << " " << job.interpolation
                    << ": at " << (at - mine.begin()) << " " << static_cast<int>(*at)
                    << ", torchvision " << static_cast<int>(*theirs);
    }
  }
  EXPECT_EQ(failures, 0) << ops::policy_op_name(op) << ": jobs that differ";
  EXPECT_GT(compared, 0u);
  if (op != PolicyOp::kIdentity) {
    EXPECT_GT(changed, compared / 3);  // not vacuous (Color leaves "L" images)
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryOp, PilPolicyOpsTest,
    ::testing::Values(PolicyOp::kIdentity, PolicyOp::kShearX, PolicyOp::kShearY,
                      PolicyOp::kTranslateX, PolicyOp::kTranslateY, PolicyOp::kRotate,
                      PolicyOp::kBrightness, PolicyOp::kColor, PolicyOp::kContrast,
                      PolicyOp::kSharpness, PolicyOp::kPosterize, PolicyOp::kSolarize,
                      PolicyOp::kAutoContrast, PolicyOp::kEqualize, PolicyOp::kInvert),
    [](const ::testing::TestParamInfo<PolicyOp>& info) {
      return std::string(ops::policy_op_name(info.param));
    });

// Prints every magnitude table of torchvision's spaces, v1's and v2's: "version space bins
// height width name signed v v ..."; v2's Solarize as the threshold its
// _apply_image_or_video_transform gives a PIL image (255.0 times the entry).
constexpr const char* kPilPolicyOpsMagnitudeScript = R"(
import sys
from torchvision.transforms import autoaugment as A
from torchvision.transforms.v2 import _auto_augment as A2
for bins in range(2, 81):
    for h, w in ((37, 29), (224, 224), (1, 1001)):
        spaces = {"wide": A.TrivialAugmentWide(bins)._augmentation_space(bins),
                  "rand": A.RandAugment()._augmentation_space(bins, (h, w)),
                  "auto": A.AutoAugment()._augmentation_space(bins, (h, w))}
        for space, ops in spaces.items():
            for name, (m, signed) in ops.items():
                values = [float(v) for v in m.reshape(-1).tolist()] if m.ndim > 0 else []
                print("v1", space, bins, h, w, name, int(signed), *[repr(v) for v in values])
        v2 = {"wide": A2.TrivialAugmentWide, "rand": A2.RandAugment, "auto": A2.AutoAugment}
        for space, cls in v2.items():
            for name, (magnitudes, signed) in cls._AUGMENTATION_SPACE.items():
                m = magnitudes(bins, h, w)
                values = [] if m is None else [float(v) for v in m.tolist()]
                if name == "Solarize":
                    values = [255.0 * v for v in values]
                print("v2", space, bins, h, w, name, int(signed), *[repr(v) for v in values])
)";

TEST(PilPolicyOpsMagnitudesTest, AreTorchvisionsTables) {
  stoker::testing::TempDir dir;
  std::ofstream(dir / "magnitudes.py") << kPilPolicyOpsMagnitudeScript;
  const std::string command =
      std::string(STOKER_PYTHON) + " " + (dir / "magnitudes.py") + " > " + (dir / "magnitudes.txt");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::map<std::string, PolicyOp> by_name;
  for (int k = 0; k <= static_cast<int>(PolicyOp::kInvert); ++k) {
    by_name[ops::policy_op_name(static_cast<PolicyOp>(k))] = static_cast<PolicyOp>(k);
  }
  std::ifstream in(dir / "magnitudes.txt");
  std::string line;
  int tables = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string version_text, space_text, name;
    int64_t bins = 0, h = 0, w = 0;
    int is_signed = 0;
    fields >> version_text >> space_text >> bins >> h >> w >> name >> is_signed;
    const PolicyVersion version = version_text == "v2" ? PolicyVersion::kV2 : PolicyVersion::kV1;
    const PolicySpace space = space_text == "wide"   ? PolicySpace::kTrivialAugmentWide
                              : space_text == "rand" ? PolicySpace::kRandAugment
                                                     : PolicySpace::kAutoAugment;
    ASSERT_TRUE(by_name.count(name)) << line;
    std::vector<double> want;
    for (double v; fields >> v;) want.push_back(v);
    EXPECT_EQ(ops::policy_magnitudes(space, by_name[name], bins, h, w, version), want) << line;
    EXPECT_EQ(ops::policy_op_signed(by_name[name]), is_signed == 1) << line;
    ++tables;
  }
  EXPECT_EQ(tables, 2 * 79 * 3 * (14 + 14 + 14));
}

}  // namespace
}  // namespace stoker
