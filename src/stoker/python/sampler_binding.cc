#include "stoker/python/sampler_binding.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "stoker/pipeline/loader_settings.h"
#include "stoker/pipeline/order_registry.h"
#include "stoker/pipeline/sampler.h"
#include "stoker/python/op_binding.h"
#include "stoker/python/sigint_cancelled.h"
#include "stoker/util/status.h"

namespace stoker::python {

namespace py = pybind11;
using namespace pybind11::literals;

namespace {

// Error (kInvalidArgument) unless `value` lies in [minimum, maximum], naming `name`.
void check_range(const char* name, int64_t value, int64_t minimum, int64_t maximum) {
  if (value < minimum || value > maximum)
    throw Error(invalid_argument(
        fmt::format("{} must be in [{}, {}], not {}", name, minimum, maximum, value)));
}

// (indices, sizes, positions) of the plan of epoch `epoch` from global position `start`:
// this rank's dataset indices batch after batch (int64 [samples]), each batch's size (int64
// [batches]) and the global position once every rank has consumed it (int64 [batches]). With
// `parts` (each part's records, summing to `size`; `part_tokens`: their tokens, where token
// data), the "mixture" order over them with `mixture`'s parameters, as a stoker.Mixture's
// loader deals it.
py::tuple sampler_plan(int64_t size, uint64_t seed, bool shuffle, int rank, int world_size,
                       int64_t batch_size, const std::string& last_batch, int64_t epoch,
                       int64_t start, int64_t shuffle_window, int64_t ra_reps,
                       const std::vector<int64_t>& parts, const std::vector<int64_t>& part_tokens,
                       const py::dict& mixture) {
  check_range("size", size, 1, INT64_MAX);
  check_range("world_size", world_size, 1, INT32_MAX);
  check_range("rank", rank, 0, world_size - 1);
  check_range("batch_size", batch_size, 1, INT64_MAX);
  check_range("epoch", epoch, 0, kMaxEpoch);
  check_range("shuffle_window", shuffle_window, 0, kMaxShuffleWindow);
  check_range("ra_reps", ra_reps, 1, INT32_MAX);
  const std::optional<LastBatch> last = kLastBatchNames.find(last_batch);
  if (!last)
    throw Error(invalid_argument(
        fmt::format("last_batch '{}' is not one of {}", last_batch, kLastBatchNames.joined())));
  SamplerOptions options;
  options.seed = seed;
  options.shuffle = shuffle;
  options.rank = rank;
  options.world_size = world_size;
  options.batch_size = batch_size;
  options.last_batch = *last;
  options.shuffle_window = shuffle_window;
  options.repeats = ra_reps;
  std::optional<Sampler> sampler;
  if (parts.empty()) {
    sampler.emplace(size, options);
  } else {
    if (std::accumulate(parts.begin(), parts.end(), int64_t{0}) != size)
      throw Error(invalid_argument(fmt::format("the parts' records do not sum to {}", size)));
    OrderInput input{seed, shuffle, {}, part_tokens};
    for (const int64_t records : parts) input.parts.push_back({records});
    sampler.emplace(make_order("mixture", input, params_from(mixture)).value_or_throw(), options);
  }
  check_range("start", start, 0, sampler->dataset_size());
  const EpochPlan plan = cancelled_by_sigint([&] { return sampler->plan(epoch, start); });
  const int64_t batches = plan.num_batches();
  int64_t samples = 0;
  for (int64_t b = 0; b < batches; ++b) samples += static_cast<int64_t>(plan.batch(b).size);
  py::array_t<int64_t> indices(samples), sizes(batches), positions(batches);
  int64_t* index = indices.mutable_data();
  for (int64_t b = 0; b < batches; ++b) {
    const IndexSpan batch = plan.batch(b);
    index = std::copy(batch.begin(), batch.end(), index);
    sizes.mutable_data()[b] = static_cast<int64_t>(batch.size);
    positions.mutable_data()[b] = plan.global_position_after(b);
  }
  return py::make_tuple(indices, sizes, positions);
}

}  // namespace

void register_sampler(py::module_& module) {
  module.def("sampler_plan", &sampler_plan, "size"_a, py::kw_only(), "seed"_a, "shuffle"_a,
             "rank"_a, "world_size"_a, "batch_size"_a, "last_batch"_a, "epoch"_a, "start"_a,
             "shuffle_window"_a = kShuffleAll, "ra_reps"_a = 1, "parts"_a = std::vector<int64_t>{},
             "part_tokens"_a = std::vector<int64_t>{}, "mixture"_a = py::dict(),
             "(indices, sizes, positions): one rank's plan of an epoch over `size` samples as "
             "the native loader makes it (sampler.h): its dataset indices batch after batch, "
             "each batch's size and the global position after it; with `parts` (records each), "
             "the \"mixture\" order over them with `mixture`'s parameters; ValueError naming a "
             "bad argument");
}

}  // namespace stoker::python
