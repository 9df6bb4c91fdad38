#include "stoker/train/optimizers.h"

#include <gtest/gtest.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "stoker/util/status.h"

namespace stoker {
namespace {

std::vector<at::Tensor> one_param() { return {torch::ones({2}, torch::requires_grad())}; }

OptimizerSpec spec_of(const std::string& name, double lr) {
  OptimizerSpec spec;
  spec.name = name;
  spec.lr = lr;
  return spec;
}

// The message of the Error that make_optimizer throws for `spec`, or "" if it does not throw.
std::string error_of(const OptimizerSpec& spec) {
  try {
    make_optimizer(spec, one_param());
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(MakeOptimizerTest, SgdWithNesterovMomentum) {
  OptimizerSpec spec = spec_of("sgd", 0.1);
  spec.momentum = 0.9;
  spec.nesterov = true;
  spec.weight_decay = 1e-4;
  auto optimizer = make_optimizer(spec, one_param());
  auto* sgd = dynamic_cast<torch::optim::SGD*>(optimizer.get());
  ASSERT_NE(sgd, nullptr);
  const auto& options =
      static_cast<const torch::optim::SGDOptions&>(sgd->param_groups().at(0).options());
  EXPECT_DOUBLE_EQ(options.lr(), 0.1);
  EXPECT_DOUBLE_EQ(options.momentum(), 0.9);
  EXPECT_TRUE(options.nesterov());
  EXPECT_DOUBLE_EQ(options.weight_decay(), 1e-4);
}

TEST(MakeOptimizerTest, SgdStepFollowsGradient) {
  std::vector<at::Tensor> params = one_param();
  auto optimizer = make_optimizer(spec_of("sgd", 0.1), params);
  params[0].mutable_grad() = torch::tensor({2.0f, -1.0f});
  optimizer->step();
  EXPECT_TRUE(torch::allclose(params[0], torch::tensor({0.8f, 1.1f})));
}

TEST(MakeOptimizerTest, AdamAndAdamW) {
  OptimizerSpec spec = spec_of("adam", 3e-4);
  spec.beta1 = 0.8;
  auto adam = make_optimizer(spec, one_param());
  ASSERT_NE(dynamic_cast<torch::optim::Adam*>(adam.get()), nullptr);
  const auto& adam_options =
      static_cast<const torch::optim::AdamOptions&>(adam->param_groups().at(0).options());
  EXPECT_DOUBLE_EQ(adam_options.lr(), 3e-4);
  EXPECT_DOUBLE_EQ(std::get<0>(adam_options.betas()), 0.8);
  EXPECT_DOUBLE_EQ(std::get<1>(adam_options.betas()), 0.999);
  EXPECT_DOUBLE_EQ(adam_options.weight_decay(), 0.0);

  auto adamw = make_optimizer(spec_of("adamw", 1e-3), one_param());
  ASSERT_NE(dynamic_cast<torch::optim::AdamW*>(adamw.get()), nullptr);
  const auto& adamw_options =
      static_cast<const torch::optim::AdamWOptions&>(adamw->param_groups().at(0).options());
  EXPECT_DOUBLE_EQ(adamw_options.weight_decay(), 0.01);  // PyTorch's default
}

TEST(MakeOptimizerTest, UnknownNameListsKnownOnes) {
  const std::string message = error_of(spec_of("lion", 1e-3));
  EXPECT_NE(message.find("lion"), std::string::npos) << message;
  EXPECT_NE(message.find("sgd, adam, adamw"), std::string::npos) << message;
}

TEST(MakeOptimizerTest, RejectsContradictorySettings) {
  OptimizerSpec nesterov_without_momentum = spec_of("sgd", 0.1);
  nesterov_without_momentum.nesterov = true;
  EXPECT_NE(error_of(nesterov_without_momentum).find("nesterov"), std::string::npos);

  OptimizerSpec nesterov_with_dampening = spec_of("sgd", 0.1);
  nesterov_with_dampening.nesterov = true;
  nesterov_with_dampening.momentum = 0.9;
  nesterov_with_dampening.dampening = 0.1;
  EXPECT_NE(error_of(nesterov_with_dampening).find("dampening"), std::string::npos);

  OptimizerSpec adam_with_momentum = spec_of("adam", 1e-3);
  adam_with_momentum.momentum = 0.9;
  EXPECT_NE(error_of(adam_with_momentum).find("sgd only"), std::string::npos);

  OptimizerSpec sgd_with_betas = spec_of("sgd", 0.1);
  sgd_with_betas.beta2 = 0.99;
  EXPECT_NE(error_of(sgd_with_betas).find("adam"), std::string::npos);

  EXPECT_NE(error_of(spec_of("adam", 0.0)).find("lr"), std::string::npos);
  OptimizerSpec negative_decay = spec_of("adamw", 1e-3);
  negative_decay.weight_decay = -1.0;
  EXPECT_NE(error_of(negative_decay).find("weight_decay"), std::string::npos);
  OptimizerSpec bad_beta = spec_of("adam", 1e-3);
  bad_beta.beta1 = 1.0;
  EXPECT_NE(error_of(bad_beta).find("beta1"), std::string::npos);
}

}  // namespace
}  // namespace stoker
