#pragma once
// The input each rank of dist_test's "collectives" scenario sums: random values that differ per
// rank, reproducible in the test process to compute the single-process reference.

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randn.h>

namespace stoker::testing {

inline at::Tensor rank_input(int rank) {
  return at::randn({257}, at::make_generator<at::CPUGeneratorImpl>(1000 + rank));
}

}  // namespace stoker::testing
