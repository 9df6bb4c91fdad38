#include "stoker/pipeline/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <climits>
#include <numeric>
#include <string>
#include <utility>

#include "stoker/pipeline/order_registry.h"
#include "stoker/util/cancel_scope.h"
#include "stoker/util/status.h"

namespace stoker {
namespace {

// The order options name over `shard_records` (see sampler.h).
std::shared_ptr<const GlobalOrder> order_of(std::vector<int64_t> shard_records,
                                            const SamplerOptions& options) {
  assert(options.shuffle_window >= 0 &&
         std::all_of(shard_records.begin(), shard_records.end(), [](int64_t c) { return c >= 0; }));
  OrderInput input;
  input.seed = options.seed;
  input.shuffle = options.shuffle;
  input.parts = {std::move(shard_records)};
  const bool windowed = options.shuffle && options.shuffle_window != kShuffleAll;
  return windowed ? make_order("shard_window", input, {{"window", options.shuffle_window}})
                        .value_or_throw()
                  : make_order("global", input).value_or_throw();
}

// Where the batches of `size` samples cut into batches of `batch_size` begin, then `size`.
std::vector<int64_t> uniform_offsets(int64_t size, int64_t batch_size) {
  std::vector<int64_t> offsets;
  for (int64_t first = 0; first < size; first += batch_size) offsets.push_back(first);
  offsets.push_back(size);
  return offsets;
}

}  // namespace

EpochPlan::EpochPlan(int64_t epoch, int64_t start, int64_t max_position, int64_t world_size,
                     int64_t unpadded, std::vector<int64_t> indices, std::vector<int32_t> repeats,
                     std::vector<int64_t> offsets, std::vector<int32_t> parts, int64_t per_record)
    : epoch_(epoch),
      start_(start),
      max_position_(max_position),
      world_size_(world_size),
      num_batches_(static_cast<int64_t>(offsets.size()) - 1),
      unpadded_(std::min(unpadded, static_cast<int64_t>(indices.size()))),
      indices_(std::make_shared<const std::vector<int64_t>>(std::move(indices))),
      repeats_(std::make_shared<const std::vector<int32_t>>(std::move(repeats))),
      parts_(std::make_shared<const std::vector<int32_t>>(std::move(parts))),
      per_record_(per_record),
      offsets_(std::make_shared<const std::vector<int64_t>>(std::move(offsets))) {}

namespace {

// For each k, how often indices[k] occurs in indices[0, k): the repeat a duplicated index draws
// its augmentation with (a RASampler's repeats), so no two of them get the same draws. Empty
// where no index repeats.
std::vector<int32_t> occurrences_before(const std::vector<int64_t>& indices) {
  std::vector<size_t> order(indices.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return indices[a] < indices[b]; });
  std::vector<int32_t> repeats(indices.size(), 0);
  bool any = false;
  for (size_t j = 1; j < order.size(); ++j) {
    if (indices[order[j]] == indices[order[j - 1]]) {
      repeats[order[j]] = repeats[order[j - 1]] + 1;
      any = true;
    }
  }
  if (!any) repeats.clear();
  return repeats;
}

}  // namespace

EpochPlan EpochPlan::of_batches(int64_t epoch, ExplicitBatches batches, int64_t dataset_size,
                                int64_t batch_size) {
  if (epoch < 0)
    throw Error(invalid_argument("EpochPlan: epoch must be >= 0, got " + std::to_string(epoch)));
  const auto size = static_cast<int64_t>(batches.indices.size());
  std::vector<int64_t> offsets;  // of the batches from start on
  int64_t first = 0;
  for (size_t b = 0; b < batches.batch_sizes.size(); ++b) {
    const int64_t n = batches.batch_sizes[b];
    if (n < 1 || n > batch_size)
      throw Error(invalid_argument(fmt::format(
          "the sampler's batch {} holds {} samples, outside [1, {}] (the loader's batch_size)", b,
          n, batch_size)));
    if (first >= batches.start) offsets.push_back(first);
    first += n;
  }
  if (first != size)
    throw Error(invalid_argument(
        fmt::format("the sampler's batch sizes sum to {}, not the {} indices", first, size)));
  if (batches.start != (offsets.empty() ? size : offsets.front()))
    throw Error(invalid_argument(fmt::format(
        "start {} is not where one of the sampler's batches begins, nor the end of its {} "
        "indices",
        batches.start, size)));
  offsets.push_back(size);
  for (size_t b = 0, k = 0; b < batches.batch_sizes.size(); ++b) {
    for (const size_t end = k + static_cast<size_t>(batches.batch_sizes[b]); k < end; ++k) {
      const int64_t i = batches.indices[k];
      if (i < 0 || i >= dataset_size)
        throw Error(invalid_argument(
            fmt::format("the sampler's batch {} holds index {}, outside the dataset's {} records",
                        b, i, dataset_size)));
    }
  }
  std::vector<int32_t> repeats =
      batches.repeats ? occurrences_before(batches.indices) : std::vector<int32_t>{};
  return EpochPlan(epoch, batches.start, size, 1, size, std::move(batches.indices),
                   std::move(repeats), std::move(offsets));
}

void EpochPlan::check_batch(int64_t b) const {
  if (b < 0 || b >= num_batches_) {
    throw Error(invalid_argument("EpochPlan: batch " + std::to_string(b) + " outside [0, " +
                                 std::to_string(num_batches_) + ")"));
  }
}

IndexSpan EpochPlan::span(int64_t first, int64_t size) const {
  return IndexSpan{indices_->data() + first, static_cast<size_t>(size),
                   repeats_->empty() ? nullptr : repeats_->data() + first,
                   parts_->empty() ? nullptr : parts_->data() + first, per_record_};
}

IndexSpan EpochPlan::batch(int64_t b) const {
  check_batch(b);
  const int64_t first = (*offsets_)[b];
  return span(first, (*offsets_)[b + 1] - first);
}

void EpochPlan::prefetch(int64_t b) const {
  if (b < 0 || b >= num_batches_) return;
  constexpr int64_t kLine = 64;
  constexpr int64_t kMostLines = 16;  // enough to be at hand; a larger batch's rest streams
  __builtin_prefetch(offsets_->data() + b + 1);
  const IndexSpan span = batch(b);
  const auto lines = [&](const void* data, int64_t bytes) {
    const auto* at = static_cast<const char*>(data);
    for (int64_t k = 0; k < std::min(bytes, kMostLines * kLine); k += kLine)
      __builtin_prefetch(at + k);
  };
  const auto n = static_cast<int64_t>(span.size);
  lines(span.data, n * static_cast<int64_t>(sizeof(*span.data)));
  if (span.repeats) lines(span.repeats, n * static_cast<int64_t>(sizeof(*span.repeats)));
  if (span.parts) lines(span.parts, n * static_cast<int64_t>(sizeof(*span.parts)));
}

int64_t EpochPlan::padding(int64_t b) const {
  const auto size = static_cast<int64_t>(batch(b).size);
  return size - std::clamp<int64_t>(unpadded_ - (*offsets_)[b], 0, size);
}

int64_t EpochPlan::global_position_after(int64_t b) const {
  check_batch(b);
  // Samples each rank has consumed; times W is at most R + W - 1, so this cannot overflow.
  const int64_t per_rank = (*offsets_)[b + 1] - offsets_->front();
  return std::min(max_position_, start_ + per_rank * world_size_);
}

IndexSpan EpochPlan::sequence() const {
  if (!indices_) return IndexSpan{};
  return span(0, static_cast<int64_t>(indices_->size()));
}

Sampler::Sampler(std::shared_ptr<const GlobalOrder> order, SamplerOptions options)
    : order_(std::move(order)), dataset_size_(order_->epoch_size()), options_(options) {
  assert(dataset_size_ > 0 && options.batch_size > 0 && options.world_size > 0);
  assert(options.rank >= 0 && options.rank < options.world_size);
  assert(options.repeats >= 1 && options.repeats <= INT32_MAX);
}

Sampler::Sampler(std::vector<int64_t> shard_records, SamplerOptions options)
    : Sampler(order_of(std::move(shard_records), options), options) {}

Sampler::Sampler(int64_t dataset_size, SamplerOptions options)
    : Sampler(std::vector<int64_t>{dataset_size}, options) {}

std::vector<int64_t> Sampler::samples(int64_t epoch) const {
  if (epoch < 0)
    throw Error(invalid_argument("Sampler: epoch must be >= 0, got " + std::to_string(epoch)));
  std::vector<int64_t> order = order_->order(epoch);
  // Each base sample `repeats` times in a row; backwards, so that order[q / k] is still unread.
  for (int64_t q = dataset_size_ - 1; q >= 0 && options_.repeats > 1; --q) {
    poll_cancellation(q);
    order[q] = order[q / options_.repeats];
  }
  return order;
}

std::vector<int64_t> Sampler::order(int64_t epoch) const {
  std::vector<int64_t> order = samples(epoch);
  const int64_t per_record = samples_per_record();
  if (per_record > 1)
    for (int64_t& s : order) s /= per_record;
  return order;
}

int64_t Sampler::samples_per_record() const { return order_->samples_per_record(); }

namespace {

void check_plan_start(int64_t epoch, int64_t start) {
  if (epoch < 0 || start < 0) {
    throw Error(invalid_argument("Sampler: epoch and start must be >= 0, got epoch " +
                                 std::to_string(epoch) + ", start " + std::to_string(start)));
  }
}

}  // namespace

EpochPlan Sampler::plan(int64_t epoch, int64_t start) const {
  check_plan_start(epoch, start);
  return plan(epoch, start, samples_per_rank(start) > 0 ? samples(epoch) : std::vector<int64_t>{});
}

EpochPlan Sampler::plan(int64_t epoch, int64_t start, std::vector<int64_t> order) const {
  check_plan_start(epoch, start);
  const int64_t n = dataset_size_;
  const int64_t w = options_.world_size;
  const int64_t per_rank = samples_per_rank(start);
  const int64_t k = options_.repeats;
  const int64_t per_record = order_->samples_per_record();
  std::vector<int64_t> indices;
  std::vector<int32_t> repeats, parts;
  assert(per_rank == 0 || static_cast<int64_t>(order.size()) == n);
  if (per_rank > 0 && w == 1 && start == 0 && k == 1 && per_record == 1 && per_rank <= n) {
    indices = std::move(order);  // the order's first per_rank samples, as they are
    indices.resize(static_cast<size_t>(per_rank));
  } else if (per_rank > 0) {
    indices.resize(static_cast<size_t>(per_rank));
    if (k > 1) repeats.resize(static_cast<size_t>(per_rank));
    if (per_record > 1) parts.resize(static_cast<size_t>(per_rank));
    // This rank's i-th position, start + i * w + rank, past n (padding) wrapping to the start of
    // the order: stepped, not divided, a sample.
    int64_t position = (start + options_.rank) % n;
    for (int64_t i = 0; i < per_rank; ++i) {
      poll_cancellation(i);
      if (per_record > 1) {
        indices[i] = order[position] / per_record;
        parts[i] = static_cast<int32_t>(order[position] % per_record);
      } else {
        indices[i] = order[position];
      }
      if (k > 1) repeats[i] = static_cast<int32_t>(position % k);
      position += w;
      if (position >= n) position %= n;
    }
  }
  std::vector<int64_t> offsets = uniform_offsets(per_rank, options_.batch_size);
  return EpochPlan(epoch, start, n, w, unpadded_samples(n, start, options_.rank, w),
                   std::move(indices), std::move(repeats), std::move(offsets), std::move(parts),
                   per_record);
}

int64_t Sampler::samples_per_rank(int64_t start) const {
  const int64_t b = options_.batch_size;
  const int64_t w = options_.world_size;
  const int64_t remaining = dataset_size_ - std::min(std::max<int64_t>(start, 0), dataset_size_);
  const int64_t dealt = (remaining + w - 1) / w;  // ceil(R/W)
  switch (options_.last_batch) {
    case LastBatch::kDrop:
      return remaining / w / b * b;
    case LastBatch::kPad:  // ceil(ceil(R/W) / B) * B = ceil(R/(W*B)) * B, without W*B
      return dealt == 0 ? 0 : ((dealt - 1) / b + 1) * b;
    case LastBatch::kShort:
      break;
  }
  return dealt;
}

int64_t Sampler::num_batches(int64_t start) const {
  return (samples_per_rank(start) + options_.batch_size - 1) / options_.batch_size;
}

int64_t unpadded_samples(int64_t dataset_size, int64_t start, int rank, int world_size) {
  const int64_t first = std::max<int64_t>(start, 0) + rank;
  return first < dataset_size ? (dataset_size - first - 1) / world_size + 1 : 0;
}

}  // namespace stoker
