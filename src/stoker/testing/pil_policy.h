#pragma once
// Test helper of the augmentation policies (pil_policy_ops.h, trivial_augment_wide, ...):
// chains of policy operations applied to images by torchvision's own _apply_op on PIL images,
// or on their uint8 tensors for backend=tensor (STOKER_PYTHON), each magnitude read from
// torchvision's _augmentation_space of the policy class, against apply_policy_op, pixel for
// pixel; for transforms v2, its policy class's _apply_image_or_video_transform with the
// magnitudes of its _AUGMENTATION_SPACE. The reference runs with MKL pinned (reference_python.h);
// a tensor's also without, to check how torchvision differs on this CPU.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/pipeline/ops/augment_policies.h"
#include "stoker/pipeline/ops/pil_policy_ops.h"
#include "stoker/testing/pil_reference.h"
#include "stoker/testing/reference_python.h"
#include "stoker/testing/temp_dir.h"

namespace stoker::pil_policy_testing {

using ops::PolicyOp;
using ops::PolicySpace;
using pil_reference::TestImage;

// Whether `op` moves pixels (an affine transform: torch's affine grid on a tensor).
inline bool geometric(PolicyOp op) { return op >= PolicyOp::kShearX && op <= PolicyOp::kRotate; }

// One _apply_op: the operation, its magnitude bin (any for a scalar magnitude) and sign.
struct PolicyStep {
  PolicyOp op = PolicyOp::kIdentity;
  int64_t bin = 0;
  bool negative = false;
};

// Steps applied in order to image `image` with the magnitudes of `space` (`bins` bins) of
// transforms `version` and torchvision's `fill` (empty: None).
struct PolicyJob {
  size_t image = 0;
  PolicySpace space = PolicySpace::kTrivialAugmentWide;
  int64_t bins = 31;
  std::vector<double> fill;
  std::vector<PolicyStep> steps;
  std::string interpolation = "nearest";  // torchvision's name: nearest, bilinear, bicubic
  ops::PolicyVersion version = ops::PolicyVersion::kV1;
  bool tensor = false;  // on the image's uint8 tensor [C, H, W] (AutoAugment.forward's fill)
};

// Reads argv[1]/shapes.json, argv[1]/I.in and argv[1]/jobs.json; writes every job's result,
// [C, H, W], one after the other to argv[1]/out.
constexpr const char* kPolicyScript = R"(
import json, sys
import numpy as np
import PIL.Image
import torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms import autoaugment as A
from torchvision.transforms.v2 import _auto_augment as A2
d = sys.argv[1]
v2_classes = {"wide": A2.TrivialAugmentWide, "rand": A2.RandAugment, "auto": A2.AutoAugment}
shapes = json.load(open(d + "/shapes.json"))
images = []
for i, shape in enumerate(shapes):
    x = np.fromfile(f"{d}/{i}.in", dtype=np.uint8).reshape(shape)
    images.append(PIL.Image.fromarray(x[0] if shape[0] == 1 else x.transpose(1, 2, 0)))
with open(d + "/out", "wb") as out:
    for job in json.load(open(d + "/jobs.json")):
        image = images[job["image"]]
        size = (image.height, image.width)
        mode = InterpolationMode(job["interpolation"])
        fill = job["fill"]
        if job["tensor"]:  # as AutoAugment.forward makes a tensor's fill: floats, one a channel
            channels = len(image.getbands())
            if fill is not None and job["version"] == "v1":
                fill = [float(f) for f in fill] * (channels if len(fill) == 1 else 1)
            x = np.asarray(image)
            image = torch.from_numpy(np.array(x[None] if x.ndim == 2 else
                                                          x.transpose(2, 0, 1)))
        if job["version"] == "v2":
            cls = v2_classes[job["space"]]
            policy = cls(interpolation=mode, fill=fill)
            for name, b, negative in job["steps"]:
                magnitudes, signed = cls._AUGMENTATION_SPACE[name]
                table = magnitudes(job["bins"], *size)
                m = float(table[b]) if table is not None else 0.0
                if signed and negative:
                    m *= -1.0
                image = policy._apply_image_or_video_transform(
                    image, name, m, interpolation=policy.interpolation, fill=policy._fill)
        else:
            if job["space"] == "wide":
                space = A.TrivialAugmentWide(job["bins"])._augmentation_space(job["bins"])
            elif job["space"] == "rand":
                space = A.RandAugment()._augmentation_space(job["bins"], size)
            else:
                space = A.AutoAugment()._augmentation_space(job["bins"], size)
            for name, b, negative in job["steps"]:
                magnitudes, signed = space[name]
                m = float(magnitudes[b].item()) if magnitudes.ndim > 0 else 0.0
                if signed and negative:
                    m *= -1.0
                image = A._apply_op(image, name, m, interpolation=mode, fill=fill)
        if job["tensor"]:
            y = image.numpy()
        else:
            y = np.asarray(image)
            y = y[None] if y.ndim == 2 else y.transpose(2, 0, 1)
        out.write(np.ascontiguousarray(y).tobytes())
)";

inline const char* space_name(PolicySpace space) {
  return space == PolicySpace::kTrivialAugmentWide ? "wide"
         : space == PolicySpace::kRandAugment      ? "rand"
                                                   : "auto";
}

// torchvision's result of each job, run by `python`.
inline std::vector<std::vector<uint8_t>> torchvision_policy_pixels(
    const std::vector<TestImage>& images, const std::vector<PolicyJob>& jobs,
    const std::string& python = stoker::testing::reference_python()) {
  stoker::testing::TempDir dir;
  pil_reference::write_test_images(dir, images);
  nlohmann::json listed = nlohmann::json::array();
  for (const PolicyJob& job : jobs) {
    nlohmann::json steps = nlohmann::json::array();
    for (const PolicyStep& step : job.steps) {
      steps.push_back({ops::policy_op_name(step.op), step.bin, step.negative});
    }
    listed.push_back(
        {{"image", job.image},
         {"space", space_name(job.space)},
         {"bins", job.bins},
         {"fill", job.fill.empty() ? nlohmann::json(nullptr) : nlohmann::json(job.fill)},
         {"steps", steps},
         {"interpolation", job.interpolation},
         {"version", job.version == ops::PolicyVersion::kV2 ? "v2" : "v1"},
         {"tensor", job.tensor}});
  }
  std::ofstream(dir / "jobs.json") << listed.dump();
  std::ofstream(dir / "policy.py") << kPolicyScript;
  const std::string command = python + " " + (dir / "policy.py") + " " + dir.path();
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(dir / "out", std::ios::binary);
  const std::vector<uint8_t> all((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
  std::vector<std::vector<uint8_t>> out;
  size_t at = 0;
  for (const PolicyJob& job : jobs) {
    const size_t size = images[job.image].pixels.size();
    if (at + size > all.size()) break;
    out.emplace_back(all.begin() + at, all.begin() + at + size);
    at += size;
  }
  EXPECT_EQ(out.size(), jobs.size());
  EXPECT_EQ(at, all.size());
  return out;
}

// apply_policy_op's result of a job.
inline std::vector<uint8_t> stoker_policy_pixels(const std::vector<TestImage>& images,
                                                 const PolicyJob& job) {
  const TestImage& image = images[job.image];
  std::vector<uint8_t> pixels = image.pixels;
  const int64_t c = image.shape[0];
  const int64_t h = image.shape[1];
  const int64_t w = image.shape[2];
  for (const PolicyStep& step : job.steps) {
    const std::vector<double> magnitudes =
        ops::policy_magnitudes(job.space, step.op, job.bins, h, w, job.version);
    double m = magnitudes.empty() ? 0.0 : magnitudes[step.bin];
    if (ops::policy_op_signed(step.op) && step.negative) m = -m;
    ops::apply_policy_op(step.op, m, ops::policy_fill(job.fill, c), pixels.data(), c, h, w,
                         ops::pil_filter(job.interpolation));
  }
  return pixels;
}

// Noise and smooth images, "RGB" and "L", odd sizes, square ones (Rotate's transposes), low
// contrast, one value, sides under 3.
inline std::vector<TestImage> policy_test_images() {
  std::vector<TestImage> images;
  CounterRng rng(77, 0);
  const std::vector<std::vector<int64_t>> shapes = {
      {3, 37, 29}, {1, 29, 37}, {3, 31, 31}, {1, 17, 17}, {3, 23, 40}, {1, 40, 23},
      {3, 5, 4},   {1, 1, 7},   {3, 2, 2},   {1, 3, 3},   {3, 16, 17}, {1, 33, 33}};
  for (size_t k = 0; k < shapes.size(); ++k) {
    const std::vector<int64_t>& shape = shapes[k];
    TestImage image{shape, std::vector<uint8_t>(shape[0] * shape[1] * shape[2])};
    const int64_t h = shape[1];
    const int64_t w = shape[2];
    const int kind = static_cast<int>(k % 4);  // noise, smooth, low contrast, smooth + noise
    for (size_t i = 0; i < image.pixels.size(); ++i) {
      const int64_t c = static_cast<int64_t>(i) / (h * w);
      const int64_t y = static_cast<int64_t>(i) / w % h;
      const int64_t x = static_cast<int64_t>(i) % w;
      const int u = static_cast<int>(rng.uniform_below(256));
      int value = u;
      if (kind == 1) value = static_cast<int>((x * 255 / w + y * 128 / h + c * 70) % 256);
      if (kind == 2) value = 90 + u % 23 + static_cast<int>(c) * 10;
      if (kind == 3) value = static_cast<int>((x * 7 + y * 5 + c * 40) % 200) + u % 40;
      image.pixels[i] = static_cast<uint8_t>(value);
    }
    images.push_back(std::move(image));
  }
  return images;
}

// Samples of a policy operation and torchvision's steps for the same draws, compared at once
// (one Python run).
class PolicySamples {
 public:
  PolicySamples() : images_(policy_test_images()) {}

  // `samples` samples of `op` (`given`), each image in turn (but those of another channel count
  // than a fill of several numbers), each against the steps `draw` gives the same sample with
  // the magnitudes of `space` (`bins` bins) and `fill`.
  void add(const std::string& op, const std::vector<std::pair<std::string, ParamValue>>& given,
           PolicySpace space, int64_t bins, const std::vector<double>& fill, int64_t samples,
           const std::function<std::vector<ops::PolicyStepDraw>(CounterRng&)>& draw) {
    for (int64_t i = 0; i < samples; ++i) {
      const size_t k = static_cast<size_t>(i) % images_.size();
      if (fill.size() > 1 && static_cast<int64_t>(fill.size()) != images_[k].shape[0]) continue;
      const SampleInput sample = pil_reference::op_sample(i);
      std::vector<uint8_t> pixels = images_[k].pixels;
      const Status applied =
          pil_reference::make_pixel_op(op, given, images_[k].shape)->apply(sample, pixels.data());
      ASSERT_TRUE(applied.is_ok());
      mine_.push_back(std::move(pixels));
      labels_.push_back(op + " sample " + std::to_string(i) + " bins " + std::to_string(bins) +
                        " fill " + std::to_string(fill.size()));
      for (const auto& [name, value] : given) {
        if (name == "interpolation" || name == "backend" || name == "version")
          labels_.back() += " " + std::get<std::string>(value);
      }
      CounterRng rng = sample.rng();
      PolicyJob job{k, space, bins, fill, {}};
      for (const auto& [name, value] : given) {
        if (name == "interpolation") job.interpolation = std::get<std::string>(value);
        if (name == "backend") job.tensor = std::get<std::string>(value) == "tensor";
        if (name == "version" && std::get<std::string>(value) == "v2")
          job.version = ops::PolicyVersion::kV2;
      }
      for (const ops::PolicyStepDraw& step : draw(rng)) {
        job.steps.push_back({step.op, step.bin, step.negative});
        ++ops_seen_[static_cast<size_t>(step.op)];
      }
      jobs_.push_back(std::move(job));
    }
  }

  // Every sample the same as torchvision's (MKL pinned), most changed, each of `ops` drawn; on
  // tensors, torchvision with MKL's Intel dispatch differs only in affine samples.
  void expect_torchvision(const std::vector<PolicyOp>& ops) {
    const std::vector<std::vector<uint8_t>> want = torchvision_policy_pixels(images_, jobs_);
    ASSERT_EQ(want.size(), jobs_.size());
    if (std::any_of(jobs_.begin(), jobs_.end(), [](const PolicyJob& job) { return job.tensor; })) {
      std::vector<bool> grid;
      for (const PolicyJob& job : jobs_) {
        grid.push_back(job.tensor &&
                       std::any_of(job.steps.begin(), job.steps.end(),
                                   [](const PolicyStep& s) { return geometric(s.op); }));
      }
      stoker::testing::expect_cpu_dependence_in_grid_only(
          want, torchvision_policy_pixels(images_, jobs_, stoker::testing::intel_dispatch_python()),
          grid, labels_);
    }
    int failures = 0;
    size_t changed = 0;
    for (size_t j = 0; j < jobs_.size(); ++j) {
      changed += want[j] != images_[jobs_[j].image].pixels;
      const auto [at, theirs] = std::mismatch(mine_[j].begin(), mine_[j].end(), want[j].begin());
      if (at != mine_[j].end() && ++failures <= 5) {
        std::string steps;
        for (const PolicyStep& step : jobs_[j].steps) {
          steps += std::string(" ") + ops::policy_op_name(step.op) + "/" +
                   std::to_string(step.bin) + (step.negative ? "-" : "+");
        }
        ADD_FAILURE() << labels_[j] << " image " << jobs_[j].image << steps << ": at "
                      << (at - mine_[j].begin()) << " " << static_cast<int>(*at) << ", torchvision "
                      << static_cast<int>(*theirs);
      }
    }
    EXPECT_EQ(failures, 0) << "samples unlike torchvision's, of " << jobs_.size();
    EXPECT_GT(changed, jobs_.size() / 2);
    for (PolicyOp op : ops) {
      EXPECT_GT(ops_seen_[static_cast<size_t>(op)], 0) << ops::policy_op_name(op);
    }
  }

 private:
  std::vector<TestImage> images_;
  std::vector<PolicyJob> jobs_;
  std::vector<std::vector<uint8_t>> mine_;
  std::vector<std::string> labels_;
  std::array<int, 15> ops_seen_{};
};

}  // namespace stoker::pil_policy_testing
