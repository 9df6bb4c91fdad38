#pragma once
// Test helper of the batch operations (ops/torchvision_mixing_test.cc, timm_mixup_test.cc): a
// batch of float32 images and int64 labels held in memory as the engine lays it out, the
// operation run on it, and a Python reference (STOKER_PYTHON) run on the same batch written to
// files: images.f32 [n, C, H, W], labels.i64 [n], then what the script writes back.

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/reference_python.h"
#include "stoker/testing/temp_dir.h"

namespace stoker::batch_reference {

// A batch as the engine builds it: the label slots as wide as the soft targets.
struct TestBatch {
  int64_t n = 0, num_classes = 0;
  std::vector<int64_t> shape;  // [C, H, W]
  std::vector<float> images;
  std::vector<int64_t> labels;
  std::vector<BatchFieldType> types;
  std::vector<uint8_t> label_block;  // n slots of max(8, 4 * num_classes) bytes

  TestBatch(int64_t samples, std::vector<int64_t> sample_shape, int64_t classes, uint64_t seed)
      : n(samples), num_classes(classes), shape(std::move(sample_shape)) {
    CounterRng rng(seed, 0);
    images.resize(static_cast<size_t>(n * shape[0] * shape[1] * shape[2]));
    for (float& x : images) x = rng.next_float() * 4 - 2;
    for (int64_t k = 0; k < n; ++k)
      labels.push_back(static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(classes))));
    types = {{"image", DType::kFloat32, shape}, {"label", DType::kInt64, {}}};
  }
  size_t label_slot() const { return std::max<size_t>(8, 4 * static_cast<size_t>(num_classes)); }

  // The input of batch `position` (its stream) over a fresh copy of the batch in `images_out`
  // and label_block.
  BatchInput input(int64_t position, std::vector<float>& images_out) {
    images_out = images;
    label_block.assign(label_slot() * static_cast<size_t>(n), 0);
    for (int64_t k = 0; k < n; ++k)
      std::memcpy(label_block.data() + k * label_slot(), &labels[k], sizeof(int64_t));
    BatchInput in;
    in.size = n;
    in.epoch = 2;
    in.position = position;
    in.seed = 11;
    const size_t image_bytes = sizeof(float) * shape[0] * shape[1] * shape[2];
    in.fields = {{&types[0], reinterpret_cast<uint8_t*>(images_out.data()), image_bytes},
                 {&types[1], label_block.data(), label_slot()}};
    return in;
  }
  // The soft targets the operation left in label_block.
  std::vector<float> targets() const {
    std::vector<float> out(static_cast<size_t>(n * num_classes));
    std::memcpy(out.data(), label_block.data(), out.size() * sizeof(float));
    return out;
  }

  void write(const testing::TempDir& dir) const {
    std::ofstream(dir / "images.f32", std::ios::binary)
        .write(reinterpret_cast<const char*>(images.data()),
               static_cast<std::streamsize>(images.size() * sizeof(float)));
    std::ofstream(dir / "labels.i64", std::ios::binary)
        .write(reinterpret_cast<const char*>(labels.data()),
               static_cast<std::streamsize>(labels.size() * sizeof(int64_t)));
  }
};

inline std::shared_ptr<const BatchTransform> make_batch_op(const std::string& text) {
  const OpCall call = parse_op_call(text).value();
  return call.op->make_batch(call.params).value();
}

// Runs `script` with reference_python() and the directory as its argument; false if it failed.
inline bool run_reference(const testing::TempDir& dir, const std::string& script) {
  std::ofstream(dir / "reference.py") << script;
  const std::string command =
      stoker::testing::reference_python() + " " + (dir / "reference.py") + " " + dir.path();
  return std::system(command.c_str()) == 0;
}

inline std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), {}};
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// The first element where `mine` and `theirs` differ, as a message; "" when equal bit for bit.
inline std::string first_difference(const std::vector<float>& mine,
                                    const std::vector<float>& theirs) {
  if (mine.size() != theirs.size())
    return "sizes " + std::to_string(mine.size()) + " and " + std::to_string(theirs.size());
  for (size_t i = 0; i < mine.size(); ++i)
    if (std::memcmp(&mine[i], &theirs[i], sizeof(float)) != 0)
      return "at " + std::to_string(i) + ": " + std::to_string(mine[i]) + ", reference " +
             std::to_string(theirs[i]);
  return "";
}

}  // namespace stoker::batch_reference
