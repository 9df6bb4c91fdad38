#include "stoker/train/amp.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include <limits>

namespace stoker {
namespace {

TEST(AmpModeTest, ParsesAndPrints) {
  for (AmpMode mode : {AmpMode::kOff, AmpMode::kBf16, AmpMode::kFp16}) {
    Result<AmpMode> parsed = parse_amp_mode(to_string(mode));
    ASSERT_TRUE(parsed.is_ok());
    EXPECT_EQ(parsed.value(), mode);
  }
  Result<AmpMode> bad = parse_amp_mode("fp8");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("fp8"), std::string::npos);
  EXPECT_NE(bad.status().message().find("bf16"), std::string::npos);
}

TEST(AutocastGuardTest, Bf16LinearInsideFloat32Outside) {
  torch::nn::Linear linear(4, 3);
  at::Tensor x = torch::randn({2, 4});
  {
    AutocastGuard guard(AmpMode::kBf16);
    EXPECT_EQ(linear(x).scalar_type(), at::kBFloat16);
  }
  EXPECT_EQ(linear(x).scalar_type(), at::kFloat);
}

TEST(AutocastGuardTest, NestingRestoresOuterState) {
  torch::nn::Linear linear(4, 3);
  at::Tensor x = torch::randn({2, 4});
  {
    AutocastGuard outer(AmpMode::kBf16);
    {
      AutocastGuard inner(AmpMode::kOff);
      EXPECT_EQ(linear(x).scalar_type(), at::kFloat);
    }
    EXPECT_EQ(linear(x).scalar_type(), at::kBFloat16);
    {
      AutocastGuard inner(AmpMode::kBf16);
      EXPECT_EQ(linear(x).scalar_type(), at::kBFloat16);
    }
    EXPECT_EQ(linear(x).scalar_type(), at::kBFloat16);
  }
  EXPECT_EQ(linear(x).scalar_type(), at::kFloat);
}

TEST(AutocastGuardTest, Fp16OnCpuIsRejectedWithoutChangingState) {
  torch::nn::Linear linear(4, 3);
  EXPECT_THROW(AutocastGuard(AmpMode::kFp16, c10::kCPU), Error);
  EXPECT_EQ(linear(torch::randn({2, 4})).scalar_type(), at::kFloat);
}

LossScalerOptions scaler_options(double init_scale, int64_t growth_interval = 2000) {
  LossScalerOptions options;
  options.init_scale = init_scale;
  options.growth_interval = growth_interval;
  return options;
}

// A parameter whose gradient is `grad`.
at::Tensor param_with_grad(const at::Tensor& grad) {
  at::Tensor p = torch::zeros_like(grad).requires_grad_();
  p.mutable_grad() = grad.clone();
  return p;
}

TEST(LossScalerTest, ScaleMultipliesLoss) {
  LossScaler scaler(AmpMode::kFp16, scaler_options(8.0));
  EXPECT_DOUBLE_EQ(scaler.scale(torch::tensor(1.5)).item<double>(), 12.0);
}

TEST(LossScalerTest, UnscaleDividesGradients) {
  LossScaler scaler(AmpMode::kFp16, scaler_options(3.0));
  std::vector<at::Tensor> params = {param_with_grad(torch::tensor({3.0, -6.0, 1.5})),
                                    param_with_grad(torch::tensor({9.0}))};
  params.push_back(torch::zeros({2}).requires_grad_());  // no gradient: skipped
  EXPECT_TRUE(scaler.unscale_and_check(params));
  EXPECT_TRUE(torch::allclose(params[0].grad(), torch::tensor({1.0, -2.0, 0.5})));
  EXPECT_TRUE(torch::allclose(params[1].grad(), torch::tensor({3.0})));
  EXPECT_FALSE(params[2].grad().defined());
}

TEST(LossScalerTest, InfGradientSkipsStepAndHalvesScale) {
  LossScaler scaler(AmpMode::kFp16, scaler_options(1024.0));
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<at::Tensor> params = {param_with_grad(torch::tensor({1.0, 2.0})),
                                    param_with_grad(torch::tensor({inf, 0.0}))};
  const bool finite = scaler.unscale_and_check(params);
  EXPECT_FALSE(finite);
  scaler.update(!finite);
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 512.0);
  EXPECT_EQ(scaler.state().good_steps, 0);

  std::vector<at::Tensor> nan = {param_with_grad(torch::tensor({std::nan("")}))};
  EXPECT_FALSE(scaler.unscale_and_check(nan));
}

TEST(LossScalerTest, GrowsAfterGrowthIntervalGoodSteps) {
  LossScaler scaler(AmpMode::kFp16, scaler_options(4.0, 3));
  scaler.update(false);
  scaler.update(false);
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 4.0);
  scaler.update(false);
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 8.0);
  EXPECT_EQ(scaler.state().good_steps, 0);
  // An inf resets the count of good steps.
  scaler.update(false);
  scaler.update(false);
  scaler.update(true);
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 4.0);
  scaler.update(false);
  scaler.update(false);
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 4.0);
}

TEST(LossScalerTest, StateRoundTrips) {
  LossScaler a(AmpMode::kFp16, scaler_options(16.0, 5));
  a.update(true);
  a.update(false);
  a.update(false);
  LossScaler b(AmpMode::kFp16, scaler_options(1.0, 5));
  ASSERT_TRUE(b.load_state(a.state()).is_ok());
  EXPECT_DOUBLE_EQ(b.current_scale(), 8.0);
  EXPECT_EQ(b.state().good_steps, 2);
  b.update(false);
  b.update(false);
  b.update(false);
  EXPECT_DOUBLE_EQ(b.current_scale(), 16.0);
  EXPECT_FALSE(b.load_state(LossScalerState{0.0, 0}).is_ok());
  EXPECT_FALSE(b.load_state(LossScalerState{2.0, -1}).is_ok());
}

TEST(LossScalerTest, DisabledIsPassThrough) {
  for (AmpMode mode : {AmpMode::kOff, AmpMode::kBf16}) {
    LossScaler scaler(mode);
    EXPECT_FALSE(scaler.enabled());
    EXPECT_DOUBLE_EQ(scaler.current_scale(), 1.0);
    at::Tensor loss = torch::tensor(2.5);
    EXPECT_TRUE(scaler.scale(loss).is_same(loss));
    std::vector<at::Tensor> params = {param_with_grad(torch::tensor({6.0}))};
    EXPECT_TRUE(scaler.unscale_and_check(params));
    EXPECT_DOUBLE_EQ(params[0].grad().item<double>(), 6.0);
    scaler.update(true);
    EXPECT_DOUBLE_EQ(scaler.current_scale(), 1.0);
  }
}

}  // namespace
}  // namespace stoker
