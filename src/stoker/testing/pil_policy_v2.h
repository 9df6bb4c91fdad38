#pragma once
// Test helper of the augmentation policies with version=v2 (trivial_augment_wide, rand_augment,
// auto_augment): torchvision.transforms.v2's own class, built with the same parameters, run
// whole on PIL images, or on their uint8 tensors for backend=tensor (STOKER_PYTHON), with
// stoker's draws handed to it (its module's
// torch.randint and torch.rand answer with them in the order its forward takes them), against
// stoker's operation on the same sample, pixel for pixel (on tensors, with MKL pinned and
// without: reference_jobs.h).

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "stoker/pipeline/ops/augment_policies.h"
#include "stoker/testing/pil_policy.h"
#include "stoker/testing/reference_jobs.h"

namespace stoker::pil_policy_testing {

// The script after reference_jobs' kReadImages: each job's class (job["class"], its arguments
// job["args"]) on its image, with the job's draws: "steps" [name, bin, negative] (one for
// TrivialAugmentWide, num_ops for RandAugment), or AutoAugment's "sub_policy", "ops" (its two
// operations' names), "applied" and "negative". v2 draws a bin only for an operation with a
// magnitude table, a sign (rand() <= 0.5 negates) only for a signed one, and AutoAugment's
// sign only for an applied one (rand() <= p applies).
constexpr const char* kV2PolicyScript = R"(
from torchvision.transforms import InterpolationMode
from torchvision.transforms.v2 import _auto_augment as A2
real_torch = A2.torch

class Queue:  # torch.randint or torch.rand, answering with stoker's draws in v2's order
    def __init__(self): self.queue = []
    def __call__(self, *args, **kwargs):
        return real_torch.tensor([self.queue.pop(0)])

class Torch:  # the module's torch, but its randint and rand
    randint = Queue()
    rand = Queue()
    def __getattr__(self, name): return getattr(real_torch, name)

A2.torch = Torch()
ints, reals = Torch.randint.queue, Torch.rand.queue
with open(d + "/out", "wb") as out:
    for job in json.load(open(d + "/jobs.json")):
        image = images[job["image"]]
        height, width = image.height, image.width
        args = dict(job["args"])
        if args.pop("backend", "pil") == "tensor":
            x = np.asarray(image)
            image = real_torch.from_numpy(np.array(x[None] if x.ndim == 2 else
                                                               x.transpose(2, 0, 1)))
        args["interpolation"] = InterpolationMode(args["interpolation"])
        args["fill"] = args["fill"] or None
        if "policy" in args:
            args["policy"] = A2.AutoAugmentPolicy(args["policy"])
        policy = getattr(A2, job["class"])(**args)
        space = policy._AUGMENTATION_SPACE
        bins = args.get("num_magnitude_bins", 10)

        def queue_magnitude(name, b, negative, bin_drawn):
            magnitudes, signed = space[name]
            if magnitudes(bins, height, width) is None:
                return
            if bin_drawn:
                ints.append(b)
            if signed:
                reals.append(0.25 if negative else 0.75)

        if job["class"] == "AutoAugment":
            sub = policy._policies[job["sub_policy"]]
            assert [name for name, _, _ in sub] == job["ops"], (sub, job["ops"])
            ints.append(job["sub_policy"])
            for name, applied, negative in zip(job["ops"], job["applied"], job["negative"]):
                reals.append(0.0 if applied else 1.0)
                if applied:
                    queue_magnitude(name, None, negative, False)
        else:
            for name, b, negative in job["steps"]:
                ints.append(list(space).index(name))
                queue_magnitude(name, b, negative, job["class"] == "TrivialAugmentWide")
        y = policy(image)
        assert not ints and not reals, (job, ints, reals)
        if real_torch.is_tensor(y):
            y = y.numpy()
        else:
            y = np.asarray(y)
            y = y[None] if y.ndim == 2 else y.transpose(2, 0, 1)
        out.write(np.ascontiguousarray(y).tobytes())
)";

// Steps as the script takes them: [name, bin, negative] each.
inline nlohmann::json v2_policy_steps(const std::vector<ops::PolicyStepDraw>& steps) {
  nlohmann::json listed = nlohmann::json::array();
  for (const ops::PolicyStepDraw& step : steps)
    listed.push_back({ops::policy_op_name(step.op), step.bin, step.negative});
  return listed;
}

// Samples of a policy operation with version=v2 and torchvision v2's class run with the same
// draws, compared at once (one Python run).
class V2PolicySamples {
 public:
  using Given = std::vector<std::pair<std::string, ParamValue>>;
  // A sample's draws as the script takes them ("steps", or AutoAugment's) and the operations
  // they apply (counted: each must be drawn).
  struct Draws {
    nlohmann::json job;
    std::vector<ops::PolicyOp> applied;
  };

  V2PolicySamples() : images_(policy_test_images()) {}

  // `samples` samples of `op` with `given` and version=v2, each image in turn (but those of
  // another channel count than a fill of several numbers), each against torchvision v2's
  // `cls` built with `given` (the same names) and run with the draws `draw` gives the sample.
  void add(const std::string& op, const std::string& cls, const Given& given, int64_t samples,
           const std::function<Draws(CounterRng&)>& draw) {
    Given with_version = given;
    with_version.emplace_back("version", std::string("v2"));
    nlohmann::json args = nlohmann::json::object();
    std::string label = op;
    for (const auto& [name, value] : given) {
      args[name] = std::visit([](const auto& v) { return nlohmann::json(v); }, value);
      label += " " + name + "=" + args[name].dump();
    }
    const size_t fill_size = args["fill"].size();
    for (int64_t i = 0; i < samples; ++i) {
      const size_t k = static_cast<size_t>(i) % images_.size();
      if (fill_size > 1 && static_cast<int64_t>(fill_size) != images_[k].shape[0]) continue;
      const SampleInput sample = pil_reference::op_sample(i);
      std::vector<uint8_t> pixels = images_[k].pixels;
      ASSERT_TRUE(pil_reference::make_pixel_op(op, with_version, images_[k].shape)
                      ->apply(sample, pixels.data())
                      .is_ok());
      CounterRng rng = sample.rng();
      Draws drawn = draw(rng);
      for (ops::PolicyOp applied : drawn.applied) ++seen_[ops::policy_op_name(applied)];
      drawn.job["image"] = k;
      drawn.job["class"] = cls;
      drawn.job["args"] = args;
      results_.push_back({k, std::move(pixels),
                          label + " sample " + std::to_string(i) + " " + drawn.job.dump(),
                          args.value("backend", "pil") == "tensor" &&
                              std::any_of(drawn.applied.begin(), drawn.applied.end(), geometric)});
      jobs_.push_back(std::move(drawn.job));
    }
  }

  // Every sample the same as torchvision v2's, most changed, each of `ops` applied somewhere.
  void expect_torchvision(const std::vector<ops::PolicyOp>& ops) {
    reference_jobs::expect_script_pixels(images_, jobs_, kV2PolicyScript, results_);
    for (ops::PolicyOp op : ops) EXPECT_GT(seen_[ops::policy_op_name(op)], 0) << op_name(op);
  }

 private:
  static const char* op_name(ops::PolicyOp op) { return ops::policy_op_name(op); }

  std::vector<pil_reference::TestImage> images_;
  nlohmann::json jobs_ = nlohmann::json::array();
  std::vector<reference_jobs::JobResult> results_;
  std::map<std::string, int> seen_;
};

}  // namespace stoker::pil_policy_testing
