#pragma once
// What the ranks of a distributed run agree on: sums of per-rank values (losses, sample counts)
// and checks that every rank holds the same values (the model, the data, the options, the point
// a run resumes from), so that their collectives match. Each call is a collective: every rank
// makes the same calls in the same order. Without a process group (one process) the values are
// their own sum and always agree.

#include <utility>
#include <vector>

namespace stoker {

class ProcessGroup;

// The sum of `values` over the ranks of `group`; `values` themselves when `group` is null.
// Throws Error if the all-reduce fails.
std::vector<double> sum_over_ranks(ProcessGroup* group, std::vector<double> values);

// An Error "the ranks differ in NAME (from MIN to MAX): FIX" unless every rank of `group` has
// the same `values` (name, value); nothing when `group` is null.
void check_ranks_agree(ProcessGroup* group,
                       const std::vector<std::pair<const char*, double>>& values, const char* fix);

}  // namespace stoker
