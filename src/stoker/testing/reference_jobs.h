#pragma once
// Test helper of the operations checked against a Python reference job by job
// (timm_rand_augment, timm_augmix): the images and jobs written for the script, the script run
// (STOKER_PYTHON), and each job's answer compared with stoker's, pixel for pixel.
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

// One job: the image it starts from, stoker's answer and what to call it in a failure.
struct JobResult {
  size_t image = 0;
  std::vector<uint8_t> mine;
  std::string label;
};

// Runs kReadImages then `script` on `jobs` and expects its answers to be `results`' (the first five
// differences reported); more than half of them must change their image (the test is not vacuous).
inline void expect_script_pixels(const std::vector<pil_reference::TestImage>& images,
                                 const nlohmann::json& jobs, const std::string& script,
                                 const std::vector<JobResult>& results) {
  stoker::testing::TempDir dir;
  pil_reference::write_test_images(dir, images);
  std::ofstream(dir / "jobs.json") << jobs.dump();
  std::ofstream(dir / "reference.py") << kReadImages << script;
  const std::string command =
      std::string(STOKER_PYTHON) + " " + (dir / "reference.py") + " " + dir.path();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(dir / "out", std::ios::binary);
  const std::vector<uint8_t> all((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
  size_t at = 0;
  int failures = 0;
  size_t changed = 0;
  for (const JobResult& result : results) {
    const size_t size = result.mine.size();
    ASSERT_LE(at + size, all.size());
    const std::vector<uint8_t> want(all.begin() + at, all.begin() + at + size);
    at += size;
    changed += want != images[result.image].pixels;
    const auto [diff, theirs] = std::mismatch(result.mine.begin(), result.mine.end(), want.begin());
    if (diff != result.mine.end() && ++failures <= 5) {
      ADD_FAILURE() << result.label << " image " << result.image << ": at "
                    << (diff - result.mine.begin()) << " " << static_cast<int>(*diff)
                    << ", reference " << static_cast<int>(*theirs);
    }
  }
  EXPECT_EQ(at, all.size());
  EXPECT_EQ(failures, 0) << "samples unlike the reference's, of " << results.size();
  EXPECT_GT(changed, results.size() / 2);
}

}  // namespace stoker::reference_jobs
