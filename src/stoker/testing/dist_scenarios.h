#pragma once
// What the ranks of distributed_test's multi-process scenarios compute, shared by the worker
// (dist_test_worker.cc) and the tests, which compute the single-process reference with it.

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/mse_loss.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/relu.h>
#include <c10/core/GradMode.h>

#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "stoker/distributed/gradient_reducer.h"
#include "stoker/util/atomic_file.h"

namespace stoker::testing {

inline at::Generator seeded(uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

// The values per name of the worker's result file: lines "NAME v v v".
inline std::map<std::string, std::vector<double>> read_values(const std::string& path) {
  std::map<std::string, std::vector<double>> values;
  std::istringstream in(read_file(path).value_or_throw());
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    double v;
    while (words >> v) values[name].push_back(v);
  }
  return values;
}

// "collectives": the values rank `rank` sums.
inline at::Tensor rank_input(int rank) { return at::randn({257}, seeded(1000 + rank)); }

// "reducer": a two-layer network, its parameters initialised from `seed`.
struct TinyNet {
  std::vector<at::Tensor> params;  // w1 [8, 16], b1 [16], w2 [16, 4], b2 [4]

  explicit TinyNet(uint64_t seed) {
    at::Generator g = seeded(seed);
    params = {at::randn({8, 16}, g) * 0.3, at::randn({16}, g) * 0.1, at::randn({16, 4}, g) * 0.3,
              at::randn({4}, g) * 0.1};
    for (at::Tensor& p : params) p.requires_grad_(true);
  }
  at::Tensor loss(const at::Tensor& x, const at::Tensor& y) const {
    const at::Tensor h = at::relu(at::addmm(params[1], x, params[0]));
    return at::mse_loss(at::addmm(params[3], h, params[2]), y);
  }
};

inline constexpr int kGlobalRows = 12;  // samples per micro-batch over all ranks
inline constexpr int kVoteStep = 1;     // the step at which the last rank votes 1
inline constexpr int kInfStep = 2;      // the step at which the last rank's loss is infinite

struct TinyRun {
  std::vector<float> votes;  // per step, summed over ranks
  std::vector<int> finite;   // per step: 1 if the (averaged) gradients were finite
};

// `steps` SGD steps of `accum` micro-batches on `net` as rank `rank` of `world` (rows rank,
// rank + world, ... of each global micro-batch: the sampler's dealing); `reducer` (null for one
// process) averages the gradients, overlapped with the last backward of each step if
// `overlap`. A step whose gradients are not finite is skipped, as the loss scaler does.
inline TinyRun train_tiny(TinyNet& net, int steps, int accum, int rank, int world,
                          GradientReducer* reducer, bool overlap = true) {
  TinyRun run;
  for (int step = 0; step < steps; ++step) {
    for (int m = 0; m < accum; ++m) {
      at::Generator g = seeded(100 + 10 * step + m);
      const at::Tensor x = at::randn({kGlobalRows, 8}, g).slice(0, rank, kGlobalRows, world);
      const at::Tensor y = at::randn({kGlobalRows, 4}, g).slice(0, rank, kGlobalRows, world);
      const bool last_rank = rank == world - 1;
      if (reducer) reducer->prepare(overlap && m == accum - 1, last_rank && step == kVoteStep);
      at::Tensor loss = net.loss(x, y) / accum;
      if (last_rank && step == kInfStep && m == 0)
        loss = loss * std::numeric_limits<float>::infinity();
      loss.backward();
    }
    if (reducer) throw_if_error(reducer->synchronize());
    run.votes.push_back(reducer ? reducer->votes() : (step == kVoteStep ? 1.0f : 0.0f));
    bool finite = true;
    for (const at::Tensor& p : net.params)
      finite = finite && at::isfinite(p.grad()).all().item<bool>();
    run.finite.push_back(finite);
    at::NoGradGuard no_grad;
    for (at::Tensor& p : net.params) {
      if (finite) p.sub_(p.grad() * 0.1);
      p.mutable_grad().zero_();
    }
  }
  return run;
}

}  // namespace stoker::testing
