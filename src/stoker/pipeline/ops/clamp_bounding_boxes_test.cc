// clamp_bounding_boxes against torchvision v2's clamp_bounding_boxes: boxes reaching past every
// side of a 37x23 image (and inside it) clamped as v2 clamps them, each float32 bit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/reference_python.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

constexpr const char* kClampReference = R"(
import sys
import numpy as np
import torch
from torchvision import tv_tensors
from torchvision.transforms import v2
boxes = torch.from_numpy(np.fromfile(sys.argv[1], dtype=np.float32).reshape(-1, 4))
boxes = tv_tensors.BoundingBoxes(boxes, format="XYXY", canvas_size=(23, 37))
v2.ClampBoundingBoxes()(boxes).as_subclass(torch.Tensor).numpy().tofile(sys.argv[2])
)";

TEST(ClampBoundingBoxesTest, BoxesAreClampedToTheImageAsTorchvisions) {
  JointSample sample;
  sample.width = 37;
  sample.height = 23;
  CounterRng noise(5, 0);
  for (int i = 0; i < 4 * 40; ++i)
    sample.boxes.push_back(static_cast<float>(noise.next_double() * 80 - 20));
  sample.labels.assign(40, 1);
  testing::TempDir dir;
  std::ofstream(dir / "boxes", std::ios::binary)
      .write(reinterpret_cast<const char*>(sample.boxes.data()),
             static_cast<std::streamsize>(sample.boxes.size() * sizeof(float)));
  std::ofstream(dir / "clamp.py") << kClampReference;
  ASSERT_EQ(std::system((stoker::testing::reference_python() + " " + (dir / "clamp.py") + " " +
                         (dir / "boxes") + " " + (dir / "clamped"))
                            .c_str()),
            0);
  std::ifstream in(dir / "clamped", std::ios::binary);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
  ASSERT_EQ(bytes.size(), sample.boxes.size() * sizeof(float));
  std::vector<float> want(sample.boxes.size());
  std::memcpy(want.data(), bytes.data(), bytes.size());

  const OpCall call = make_op_call("clamp_bounding_boxes", {}).value();
  ASSERT_TRUE(call.op->make_joint(call.params).value()->apply({}, sample).is_ok());
  EXPECT_EQ(sample.boxes, want);
  EXPECT_EQ(sample.rows(), 40);
}

}  // namespace
}  // namespace stoker
