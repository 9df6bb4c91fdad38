#include "stoker/train/input_normalizer.h"

#include <gtest/gtest.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <cstring>

#include "stoker/pipeline/batch_layout.h"
#include "stoker/util/status.h"

namespace stoker {
namespace {

Schema schema_with(std::vector<int64_t> image_shape) {
  return Schema::create(
             {{"image", DType::kUint8, std::move(image_shape)}, {"label", DType::kInt64, {}}})
      .value_or_throw();
}

// The formula itself, in float64, per channel (dimension 1 of [N, C, H, W]).
at::Tensor expected(const at::Tensor& images, const std::vector<double>& mean,
                    const std::vector<double>& std) {
  at::Tensor x = images.to(torch::kFloat64) / 255.0;
  if (images.dim() == 4) {
    for (int64_t c = 0; c < images.size(1); ++c) {
      x.select(1, c).sub_(mean[c]).div_(std[c]);
    }
    return x;
  }
  return (x - mean[0]) / std[0];
}

TEST(InputNormalizerTest, MatchesTheFormulaPerChannel) {
  torch::manual_seed(1);
  InputNormalizer normalize({3, 4, 5}, {0.1f, 0.5f, 0.9f}, {0.2f, 0.25f, 0.5f}, 8, torch::kCPU);
  const at::Tensor images = torch::randint(0, 256, {8, 3, 4, 5}, torch::kByte);
  const at::Tensor out = normalize(images);
  EXPECT_EQ(out.scalar_type(), torch::kFloat32);
  EXPECT_EQ(out.sizes(), images.sizes());
  EXPECT_TRUE(torch::allclose(out.to(torch::kFloat64),
                              expected(images, {0.1, 0.5, 0.9}, {0.2, 0.25, 0.5}), 1e-5, 1e-5));
}

TEST(InputNormalizerTest, OneMeanAndStdServeEveryChannelAndTwoDimensionalImages) {
  InputNormalizer normalize({28, 28}, {0.286f}, {0.353f}, 4, torch::kCPU);
  const at::Tensor images = torch::randint(0, 256, {4, 28, 28}, torch::kByte);
  EXPECT_TRUE(torch::allclose(normalize(images).to(torch::kFloat64),
                              expected(images, {0.286}, {0.353}), 1e-5, 1e-5));
}

TEST(InputNormalizerTest, APartialBatchIsAViewOfTheReusedBuffer) {
  InputNormalizer normalize({1, 2, 2}, {0.0f}, {1.0f}, 4, torch::kCPU);
  const at::Tensor full = normalize(torch::full({4, 1, 2, 2}, 255, torch::kByte));
  EXPECT_TRUE(torch::all(full == 1.0f).item<bool>());
  const at::Tensor part = normalize(torch::zeros({3, 1, 2, 2}, torch::kByte));
  EXPECT_EQ(part.size(0), 3);
  EXPECT_EQ(part.data_ptr(), full.data_ptr());  // the documented reuse: the step's own buffer
  EXPECT_TRUE(torch::all(part == 0.0f).item<bool>());
  EXPECT_THROW(normalize(torch::zeros({5, 1, 2, 2}, torch::kByte)), c10::Error);
}

// The trainer normalises where the loader used to: the values must not change at all.
TEST(InputNormalizerTest, EqualsTheLoadersNormalisationBitForBit) {
  const Schema schema = schema_with({3, 8, 9});
  const std::vector<float> mean = {0.4f, 0.5f, 0.6f}, std = {0.2f, 0.3f, 0.25f};
  InputNormalizer normalize({3, 8, 9}, mean, std, 5, torch::kCPU);
  const at::Tensor images = torch::randint(0, 256, {5, 3, 8, 9}, torch::kByte);
  const at::Tensor out = normalize(images).contiguous();
  // The loader's field transform, applied to records holding the same images (image first).
  const BatchLayout layout =
      BatchLayout::create(schema, {{"image", true, mean, std}}).value_or_throw();
  std::vector<float> expected(images.numel());
  std::vector<uint8_t> record(schema.fixed_bytes());
  for (int64_t k = 0; k < 5; ++k) {
    std::memcpy(record.data(), images.data_ptr<uint8_t>() + k * 216, 216);
    SampleInput input;
    input.record = {record.data(), record.size()};
    ASSERT_TRUE(layout.fields()[0]
                    .transform->apply(input, reinterpret_cast<uint8_t*>(expected.data() + k * 216))
                    .is_ok());
  }
  EXPECT_EQ(std::memcmp(out.data_ptr<float>(), expected.data(), expected.size() * sizeof(float)),
            0);
}

// A graph that still holds the previous step's input fails loudly when the buffer is reused.
TEST(InputNormalizerTest, ReuseUnderAnOpenGraphIsAnError) {
  InputNormalizer normalize({4}, {0.0f}, {1.0f}, 2, torch::kCPU);
  const at::Tensor w = torch::ones({4}, torch::requires_grad());
  const at::Tensor loss = (normalize(torch::ones({2, 4}, torch::kByte)) * w).sum();
  normalize(torch::zeros({2, 4}, torch::kByte));
  EXPECT_THROW(loss.backward(), c10::Error);
}

TEST(InputNormalizerTest, RejectsBadStatisticsAndInputs) {
  const std::vector<int64_t> shape = {3, 2, 2};
  EXPECT_THROW(InputNormalizer(shape, {0.1f, 0.2f}, {1.0f, 1.0f}, 4, torch::kCPU),
               Error);  // 2 values for 3 channels
  EXPECT_THROW(InputNormalizer(shape, {0.1f}, {0.0f}, 4, torch::kCPU), Error);
  InputNormalizer normalize(shape, {0.1f}, {1.0f}, 4, torch::kCPU);
  EXPECT_THROW(normalize(torch::zeros({2, 3, 2, 2}, torch::kFloat32)), c10::Error);
  EXPECT_THROW(normalize(torch::zeros({2, 3, 2, 3}, torch::kByte)), c10::Error);  // sample shape
  EXPECT_THROW(normalize(torch::zeros({2, 12}, torch::kByte)), c10::Error);
}

}  // namespace
}  // namespace stoker
