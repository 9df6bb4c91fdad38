#include "cli/compute_bound.h"

#include <ATen/Context.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace stoker::cli {

double compute_only_seconds(const std::string& model_name, const ModelSpec& spec,
                            const OptimizerSpec& optimizer_spec, int64_t batch_size, int64_t steps,
                            uint64_t seed, int64_t distinct_batches,
                            const std::function<void(int64_t)>& on_step) {
  at::manual_seed(seed);
  std::unique_ptr<Model> model = make_model(model_name, spec);
  model->train(true);
  auto optimizer = make_optimizer(optimizer_spec, model->parameters());
  std::vector<at::Tensor> inputs;
  for (int64_t b = 0; b < std::max<int64_t>(distinct_batches, 1); ++b)
    inputs.push_back(at::randn({batch_size, spec.channels, spec.height, spec.width}));
  const at::Tensor labels = at::randint(spec.num_classes, {batch_size}, at::kLong);
  auto step = [&](const at::Tensor& input) {
    optimizer->zero_grad();
    at::Tensor loss = at::cross_entropy_loss(model->forward(input), labels);
    loss.backward();
    optimizer->step();
  };
  if (on_step) on_step(0);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    step(inputs[s % inputs.size()]);
    if (on_step) on_step(s + 1);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace stoker::cli
