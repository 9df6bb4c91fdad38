#include "stoker/train/rank_agreement.h"

#include <ATen/ops/tensor.h>
#include <fmt/format.h>

#include "stoker/distributed/process_group.h"
#include "stoker/util/status.h"

namespace stoker {

std::vector<double> sum_over_ranks(ProcessGroup* group, std::vector<double> values) {
  if (group == nullptr) return values;
  at::Tensor t = at::tensor(values, at::kDouble);
  throw_if_error(group->all_reduce({t}));
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

void check_ranks_agree(ProcessGroup* group,
                       const std::vector<std::pair<const char*, double>>& values, const char* fix) {
  if (group == nullptr) return;
  std::vector<double> both;  // the maxima of the values and of their negations (the minima)
  for (const auto& named : values) both.push_back(named.second);
  for (const auto& named : values) both.push_back(-named.second);
  at::Tensor t = at::tensor(both, at::kDouble);
  throw_if_error(group->all_reduce({t}, ReduceOp::kMax));
  const double* r = t.data_ptr<double>();
  const size_t n = values.size();
  for (size_t i = 0; i < n; ++i) {
    if (r[i] != -r[n + i]) {
      throw Error(invalid_argument(fmt::format("the ranks differ in {} (from {} to {}): {}",
                                               values[i].first, -r[n + i], r[i], fix)));
    }
  }
}

}  // namespace stoker
