// augmix against torchvision's own AugMix (transforms v1, and v2 with kernels=v2,
// STOKER_PYTHON) on PIL images: for each sample, torchvision's AugMix is built with the same
// parameters and run with stoker's draws handed to it (its _sample_dirichlet gives the drawn
// (m0, m1) and chain weights, torch.randint in its module the drawn depths, operations, bins
// and v1's signs, v2's torch.rand its signs): pixel for pixel over many samples, every
// operation, both filters, with and without a fill; torchvision moves the image as a tensor, so
// also with MKL's Intel dispatch (reference_jobs.h), and that dispatch's own check. Then the
// parameters' errors.
#include "stoker/pipeline/ops/augmix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/testing/pil_policy.h"
#include "stoker/testing/reference_jobs.h"
#include "stoker/util/machine.h"

namespace stoker {
namespace {

// The reference script of reference_jobs.h: each job's AugMix.
constexpr const char* kAugMixScript = R"(
import torch
from torchvision import transforms as T
from torchvision.transforms import autoaugment as AA
from torchvision.transforms.v2 import _auto_augment as AA2
real_torch = AA.torch

class Queue:  # torch.randint or torch.rand, answering with stoker's draws in torchvision's order
    def __init__(self): self.queue = []
    def __call__(self, *args, **kwargs):
        return real_torch.tensor([self.queue.pop(0)])

class Torch:  # the modules' torch, but its randint and rand
    randint = Queue()
    rand = Queue()
    def __getattr__(self, name): return getattr(real_torch, name)

def drawn(cls):
    class Drawn(cls):
        def _sample_dirichlet(self, params):
            return real_torch.tensor([self.dirichlet.pop(0)], dtype=real_torch.float32)
    return Drawn

AA.torch = AA2.torch = Torch()
classes = {"v1": drawn(T.AugMix), "v2": drawn(AA2.AugMix)}
modes = {"bilinear": T.InterpolationMode.BILINEAR, "nearest": T.InterpolationMode.NEAREST}
with open(d + "/out", "wb") as out:
    for job in json.load(open(d + "/jobs.json")):
        image = images[job["image"]]
        v2 = job["kernels"] == "v2"
        aug = classes[job["kernels"]](
            severity=job["severity"], mixture_width=job["width"], chain_depth=job["depth"],
            alpha=job["alpha"], all_ops=job["all_ops"],
            interpolation=modes[job["interpolation"]], fill=job["fill"] or None)
        aug.dirichlet = [job["m"], job["w"]]
        if v2:
            space = list((aug._AUGMENTATION_SPACE if job["all_ops"]
                          else aug._PARTIAL_AUGMENTATION_SPACE).items())
        else:
            space = list(aug._augmentation_space(10, (image.height, image.width)).items())
        assert [name for name, _ in space] == job["names"], space
        queue, signs = Torch.randint.queue, Torch.rand.queue
        for chain in job["chains"]:
            if job["depth"] <= 0:
                queue.append(len(chain))
            for s in chain:
                index = job["names"].index(s["op"])
                queue.append(index)
                magnitudes, signed = space[index][1]
                if v2:
                    if magnitudes(10, image.height, image.width) is not None:
                        queue.append(s["bin"])
                        if signed:
                            signs.append(0.25 if s["negative"] else 0.75)
                    continue
                if magnitudes.ndim > 0:
                    queue.append(s["bin"])
                if signed:
                    queue.append(1 if s["negative"] else 0)
        y = np.asarray(aug(image))
        assert not queue and not signs and not aug.dirichlet, (queue, signs, aug.dirichlet)
        y = y[None] if y.ndim == 2 else y.transpose(2, 0, 1)
        out.write(np.ascontiguousarray(y).tobytes())
)";

struct AugMixCase {
  int64_t severity, width, depth;
  double alpha;
  bool all_ops;
  std::string interpolation;
  std::vector<double> fill;  // RGB's; "L" images take its first number
};

// augmix with `kernels` (v1 or v2) against torchvision's AugMix of that version.
void expect_augmix_is_torchvisions(const std::string& kernels) {
  const std::vector<pil_reference::TestImage> images = pil_policy_testing::policy_test_images();
  const std::vector<AugMixCase> cases = {
      {3, 3, -1, 1.0, true, "bilinear", {}},
      {10, 4, 2, 0.5, true, "nearest", {}},
      {7, 2, 3, 2.0, false, "bilinear", {10, 20, 30}},
      {1, 1, 1, 1.0, true, "nearest", {128, 64, 255}},
      {10, 5, -1, 1.0, true, "bilinear", {200, 0, 77}},
  };
  nlohmann::json jobs = nlohmann::json::array();
  std::vector<reference_jobs::JobResult> results;
  std::array<int, 15> used_ops{};
  for (const AugMixCase& c : cases) {
    ops::AugMixSettings settings;
    settings.severity = c.severity;
    settings.width = c.width;
    settings.depth = c.depth;
    settings.alpha = c.alpha;
    settings.all_ops = c.all_ops;
    if (kernels == "v2") settings.kernels = ops::TorchKernels::kV2;
    nlohmann::json names = nlohmann::json::array();
    for (size_t k = 0; k < ops::augmix_ops().size() - (c.all_ops ? 0 : 4); ++k)
      names.push_back(ops::policy_op_name(ops::augmix_ops()[k]));
    for (int64_t i = 0; i < 60; ++i) {
      const size_t k = static_cast<size_t>(i) % images.size();
      const std::vector<double> fill =
          images[k].shape[0] == 1 && !c.fill.empty() ? std::vector<double>{c.fill[0]} : c.fill;
      const SampleInput sample = pil_reference::op_sample(i);
      std::vector<uint8_t> pixels = images[k].pixels;
      ASSERT_TRUE(pil_reference::make_pixel_op("augmix",
                                               {{"severity", c.severity},
                                                {"mixture_width", c.width},
                                                {"chain_depth", c.depth},
                                                {"alpha", c.alpha},
                                                {"all_ops", c.all_ops},
                                                {"interpolation", c.interpolation},
                                                {"fill", fill},
                                                {"kernels", kernels}},
                                               images[k].shape)
                      ->apply(sample, pixels.data())
                      .is_ok());
      CounterRng rng = sample.rng();
      const ops::AugMixDraw draw = ops::draw_augmix(rng, settings);
      nlohmann::json chains = nlohmann::json::array();
      bool grid = false;  // AugMix moves its image as a tensor: torch's affine grid
      for (const std::vector<ops::PolicyStepDraw>& chain : draw.chains) {
        nlohmann::json steps = nlohmann::json::array();
        for (const ops::PolicyStepDraw& step : chain) {
          steps.push_back({{"op", ops::policy_op_name(step.op)},
                           {"bin", step.bin},
                           {"negative", step.negative}});
          ++used_ops[static_cast<size_t>(step.op)];
          grid = grid || pil_policy_testing::geometric(step.op);
        }
        chains.push_back(steps);
      }
      results.push_back({k, std::move(pixels),
                         kernels + " " + c.interpolation + " severity " +
                             std::to_string(c.severity) + " sample " + std::to_string(i) +
                             " chains " + chains.dump(),
                         grid});
      jobs.push_back({{"image", k},
                      {"kernels", kernels},
                      {"severity", c.severity},
                      {"width", c.width},
                      {"depth", c.depth},
                      {"alpha", c.alpha},
                      {"all_ops", c.all_ops},
                      {"interpolation", c.interpolation},
                      {"fill", fill},
                      {"names", names},
                      {"m", std::vector<float>{draw.original, draw.augmented}},
                      {"w", draw.weights},
                      {"chains", chains}});
    }
  }
  reference_jobs::expect_script_pixels(images, jobs, kAugMixScript, results);
  for (ops::PolicyOp op : ops::augmix_ops())
    EXPECT_GT(used_ops[static_cast<size_t>(op)], 0) << ops::policy_op_name(op);
}

TEST(AugMixTest, IsTorchvisionsForTheSameDraws) { expect_augmix_is_torchvisions("v1"); }

TEST(AugMixTest, WithV2KernelsIsTorchvisionV2sForTheSameDraws) {
  expect_augmix_is_torchvisions("v2");
}

// The digest of torch's affine grids for 200 random matrices (what AugMix's rotate, shear and
// translate sample on a tensor) as `python` computes them; "" when it fails.
std::string affine_grids_digest(const std::string& python) {
  const std::string command = python +
                              " -c \"import hashlib, torch; torch.manual_seed(0); print(hashlib."
                              "sha1(b''.join(torch.nn.functional.affine_grid(torch.rand(1, 2, 3) "
                              "* 2 - 1, [1, 3, 224, 224], align_corners=False).numpy().tobytes() "
                              "for _ in range(200))).hexdigest())\"";
  FILE* pipe = ::popen(command.c_str(), "r");
  std::array<char, 128> line{};
  const bool read = std::fgets(line.data(), line.size(), pipe) != nullptr;
  return ::pclose(pipe) == 0 && read ? std::string(line.data()) : "";
}

// Whether MKL may run AVX-512 kernels: the CPU has them and MKL_ENABLE_INSTRUCTIONS (which
// emulates an AVX2 machine on this one) does not forbid them.
bool mkl_may_use_avx512() {
  const char* enabled = std::getenv("MKL_ENABLE_INSTRUCTIONS");
  if (enabled != nullptr && std::string(enabled).rfind("AVX512", 0) != 0) return false;
  const std::vector<std::string> flags = machine_cpu_flags();
  return std::binary_search(flags.begin(), flags.end(), "avx512f");
}

// The references' two MKL dispatches are what they say on this machine: the pinned one
// (reference_python) is this CPU's own, pinned; on a CPU not Intel's, MKL's Intel dispatch
// (intel_dispatch_python) rounds the grid otherwise exactly where MKL may use AVX-512, so the
// preloaded library works and an AMD machine checks what an Intel Xeon computes. On an Intel
// CPU the library changes nothing, and whether its own kernel differs is only printed.
TEST(AugMixTest, ReferencesRunMklPinnedAndAsOnAnIntelCpu) {
  const std::string pinned = affine_grids_digest(testing::reference_python());
  const std::string intel = affine_grids_digest(testing::intel_dispatch_python());
  const std::string own_pinned = affine_grids_digest(testing::mkl_pinned(STOKER_PYTHON));
  ASSERT_FALSE(pinned.empty() || intel.empty() || own_pinned.empty());
  EXPECT_EQ(own_pinned, pinned);
  if (machine_cpu_vendor() == "GenuineIntel") {
    std::printf("this Intel CPU's own MKL dispatch %s MKL_CBWR=AVX2's grids\n",
                intel == pinned ? "gives" : "differs from");
  } else if (mkl_may_use_avx512()) {
    EXPECT_NE(intel, pinned) << "MKL's AVX-512 kernel should round some grid points otherwise";
  } else {
    EXPECT_EQ(intel, pinned);
  }
}

TEST(AugMixTest, BadParametersAreOneLine) {
  EXPECT_EQ(pil_reference::call_error("augmix", {{"severity", int64_t{11}}}),
            "augmix: severity must be a whole number in [1, 10], not 11");
  EXPECT_EQ(pil_reference::call_error("augmix", {{"mixture_width", int64_t{0}}}),
            "augmix: mixture_width must be a whole number in [1, 64], not 0");
  EXPECT_EQ(pil_reference::call_error("augmix", {{"alpha", 0.0}}),
            "augmix: alpha must be a number in [0.001, 1000], not 0");
  EXPECT_EQ(pil_reference::call_error("augmix", {{"interpolation", std::string("bicubic")}}),
            "augmix: interpolation must be one of nearest, bilinear, not 'bicubic'");
  const OpCall wrong_fill = make_op_call("augmix", {{"fill", std::vector<double>{1, 2}}}).value();
  EXPECT_EQ(wrong_fill.op->make_pixel(wrong_fill.params, {"image", {3, 8, 8}}).status().message(),
            "field 'image': augmix: fill has 2 numbers; give one or one per channel (3)");
}

}  // namespace
}  // namespace stoker
