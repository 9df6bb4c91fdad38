#include "stoker/train/fused_adam.h"

#include <gtest/gtest.h>
#include <torch/serialize.h>

#include <memory>
#include <sstream>
#include <vector>

namespace stoker {
namespace {

// Parameters shaped like the classic MLP's, seeded.
std::vector<at::Tensor> mlp_params() {
  torch::manual_seed(3);
  std::vector<at::Tensor> params;
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{128, 784}, {128}, {64, 128}, {64}, {10, 64}, {10}})
    params.push_back(torch::randn(shape).requires_grad_());
  return params;
}

std::vector<at::Tensor> copies(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : params) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

// `steps` steps of `optimizer` over `params` with the seeded gradients of steps [first, ...).
void run(torch::optim::Optimizer& optimizer, std::vector<at::Tensor>& params, int first,
         int steps) {
  for (int s = first; s < first + steps; ++s) {
    torch::manual_seed(100 + s);
    for (at::Tensor& p : params) p.mutable_grad() = torch::randn_like(p);
    optimizer.step();
  }
}

double max_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double out = 0;
  for (size_t i = 0; i < a.size(); ++i)
    out = std::max(out, (a[i] - b[i]).abs().max().item<double>());
  return out;
}

// The fused step is the base optimizer's update to rounding, for each option that changes it.
template <typename Fused, typename Base, typename Options>
void expect_same_updates(const Options& options) {
  std::vector<at::Tensor> fused_params = mlp_params();
  std::vector<at::Tensor> base_params = copies(fused_params);
  Fused fused(fused_params, options);
  Base base(base_params, options);
  run(fused, fused_params, 0, 50);
  run(base, base_params, 0, 50);
  const double moved = max_difference(base_params, mlp_params());
  EXPECT_GT(moved, 1e-3);                                      // the steps did move the values
  EXPECT_LT(max_difference(fused_params, base_params), 1e-6);  // by the same amounts
}

TEST(FusedAdamTest, UpdatesAsTorchAdam) {
  expect_same_updates<FusedAdam, torch::optim::Adam>(torch::optim::AdamOptions(1e-3));
  expect_same_updates<FusedAdam, torch::optim::Adam>(
      torch::optim::AdamOptions(3e-3).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.1));
  expect_same_updates<FusedAdam, torch::optim::Adam>(torch::optim::AdamOptions(1e-3).amsgrad(true));
}

TEST(FusedAdamTest, UpdatesAsTorchAdamW) {
  expect_same_updates<FusedAdamW, torch::optim::AdamW>(torch::optim::AdamWOptions(1e-3));
  expect_same_updates<FusedAdamW, torch::optim::AdamW>(
      torch::optim::AdamWOptions(2e-3).weight_decay(0.3).amsgrad(true));
}

// The state is Adam's: a checkpoint of either continues in the other.
TEST(FusedAdamTest, StateLoadsIntoTorchAdamAndBack) {
  std::vector<at::Tensor> params = mlp_params();
  FusedAdam fused(params, torch::optim::AdamOptions(1e-3));
  run(fused, params, 0, 10);
  std::ostringstream saved;
  torch::serialize::OutputArchive archive;
  fused.save(archive);
  archive.save_to(saved);

  std::vector<at::Tensor> base_params = copies(params);
  torch::optim::Adam base(base_params, torch::optim::AdamOptions(1e-3));
  std::istringstream in(saved.str());
  torch::serialize::InputArchive loaded;
  loaded.load_from(in);
  base.load(loaded);
  const auto& state = static_cast<const torch::optim::AdamParamState&>(
      *base.state().at(base_params[0].unsafeGetTensorImpl()));
  EXPECT_EQ(state.step(), 10);
  run(fused, params, 10, 10);
  run(base, base_params, 10, 10);
  EXPECT_LT(max_difference(params, base_params), 1e-6);
}

// Gradients the fused kernel does not take (here a double parameter beside float ones) leave
// the step to Adam's own: the same values to the bit.
TEST(FusedAdamTest, MixedDtypesStepAsTorchAdam) {
  std::vector<at::Tensor> params = mlp_params();
  params.push_back(torch::randn({5}, torch::kDouble).requires_grad_());
  std::vector<at::Tensor> base_params = copies(params);
  FusedAdam fused(params, torch::optim::AdamOptions(1e-3));
  torch::optim::Adam base(base_params, torch::optim::AdamOptions(1e-3));
  run(fused, params, 0, 5);
  run(base, base_params, 0, 5);
  EXPECT_EQ(max_difference(params, base_params), 0.0);
}

}  // namespace
}  // namespace stoker
