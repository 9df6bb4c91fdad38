#pragma once
// Test helper of the operations checked against a Python reference job by job
// (timm_rand_augment, timm_augmix, augmix, the v2 policies): the images and jobs written for the
// script, the script run (reference_python.h), and each job's answer compared with stoker's,
// pixel for pixel.
//
// The script gets the directory as argv[1], reads I.in and shapes.json
// (pil_reference::write_test_images; kReadImages, its start, reads them as PIL images `images`
// and the directory as `d`) and jobs.json, and writes each job's image [C, H, W] to `out`, one
// after the other.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/testing/pil_reference.h"
#include "stoker/testing/reference_python.h"
#include "stoker/testing/temp_dir.h"

namespace stoker::reference_jobs {

constexpr const char* kReadImages = R"(
import json, sys
import numpy as np
import PIL.Image
d = sys.argv[1]
images = []
for i, shape in enumerate(json.load(open(d + "/shapes.json"))):
    x = np.fromfile(f"{d}/{i}.in", dtype=np.uint8).reshape(shape)
    images.append(PIL.Image.fromarray(x[0] if shape[0] == 1 else x.transpose(1, 2, 0)))
)";

// One job: the image it starts from, stoker's answer, what to call it in a failure, and whether
// torchvision samples torch's affine grid for it (a tensor moved: reference_python.h).
struct JobResult {
  size_t image = 0;
  std::vector<uint8_t> mine;
  std::string label;
  bool grid = false;
};

// Runs kReadImages then `script` on `jobs` with `python`; each job's answer, as large as
// `results`' (fewer where the script wrote less).
inline std::vector<std::vector<uint8_t>> script_pixels(
    const std::vector<pil_reference::TestImage>& images, const nlohmann::json& jobs,
    const std::string& script, const std::vector<JobResult>& results, const std::string& python) {
  stoker::testing::TempDir dir;
  pil_reference::write_test_images(dir, images);
  std::ofstream(dir / "jobs.json") << jobs.dump();
  std::ofstream(dir / "reference.py") << kReadImages << script;
  const std::string command = python + " " + (dir / "reference.py") + " " + dir.path();
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(dir / "out", std::ios::binary);
  const std::vector<uint8_t> all((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
  std::vector<std::vector<uint8_t>> out;
  size_t at = 0;
  for (const JobResult& result : results) {
    const size_t size = result.mine.size();
    if (at + size > all.size()) break;
    out.emplace_back(all.begin() + at, all.begin() + at + size);
    at += size;
  }
  EXPECT_EQ(at, all.size());
  return out;
}

// Runs kReadImages then `script` on `jobs` (MKL pinned) and expects its answers to be `results'`
// (the first five differences reported); more than half of them must change their image (the
// test is not vacuous). Where a result samples the grid, torchvision with MKL's Intel dispatch
// differs only in such results.
inline void expect_script_pixels(const std::vector<pil_reference::TestImage>& images,
                                 const nlohmann::json& jobs, const std::string& script,
                                 const std::vector<JobResult>& results) {
  const std::vector<std::vector<uint8_t>> want =
      script_pixels(images, jobs, script, results, stoker::testing::reference_python());
  ASSERT_EQ(want.size(), results.size());
  int failures = 0;
  size_t changed = 0;
  for (size_t k = 0; k < results.size(); ++k) {
    const JobResult& result = results[k];
    changed += want[k] != images[result.image].pixels;
    const auto [diff, theirs] =
        std::mismatch(result.mine.begin(), result.mine.end(), want[k].begin());
    if (diff != result.mine.end() && ++failures <= 5) {
      ADD_FAILURE() << result.label << " image " << result.image << ": at "
                    << (diff - result.mine.begin()) << " " << static_cast<int>(*diff)
                    << ", reference " << static_cast<int>(*theirs);
    }
  }
  EXPECT_EQ(failures, 0) << "samples unlike the reference's, of " << results.size();
  EXPECT_GT(changed, results.size() / 2);
  if (std::none_of(results.begin(), results.end(), [](const JobResult& r) { return r.grid; }))
    return;
  std::vector<bool> grid;
  std::vector<std::string> labels;
  for (const JobResult& result : results) {
    grid.push_back(result.grid);
    labels.push_back(result.label);
  }
  stoker::testing::expect_cpu_dependence_in_grid_only(
      want, script_pixels(images, jobs, script, results, stoker::testing::intel_dispatch_python()),
      grid, labels);
}

}  // namespace stoker::reference_jobs
