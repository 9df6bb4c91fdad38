#include "stoker/pipeline/sampler.h"

#include <algorithm>
#include <cassert>
#include <climits>
#include <numeric>
#include <string>
#include <utility>

#include "stoker/pipeline/shard_window_order.h"
#include "stoker/util/rng.h"
#include "stoker/util/status.h"

namespace stoker {
namespace {

// The global Fisher-Yates order of the epoch, or the identity (see sampler.h).
std::vector<int64_t> fisher_yates_order(int64_t n, const SamplerOptions& options, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!options.shuffle) return order;
  CounterRng rng(options.seed, order_stream(epoch));
  for (int64_t i = n - 1; i >= 1; --i) {
    const auto j = static_cast<int64_t>(rng.uniform_below(static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

}  // namespace

EpochPlan::EpochPlan(int64_t epoch, int64_t start, int64_t dataset_size, int64_t batch_size,
                     int64_t world_size, int64_t unpadded, std::vector<int64_t> indices,
                     std::vector<int32_t> repeats)
    : epoch_(epoch),
      start_(start),
      dataset_size_(dataset_size),
      batch_size_(batch_size),
      world_size_(world_size),
      num_batches_((static_cast<int64_t>(indices.size()) + batch_size - 1) / batch_size),
      unpadded_(std::min(unpadded, static_cast<int64_t>(indices.size()))),
      indices_(std::make_shared<const std::vector<int64_t>>(std::move(indices))),
      repeats_(std::make_shared<const std::vector<int32_t>>(std::move(repeats))) {}

void EpochPlan::check_batch(int64_t b) const {
  if (b < 0 || b >= num_batches_) {
    throw Error(invalid_argument("EpochPlan: batch " + std::to_string(b) + " outside [0, " +
                                 std::to_string(num_batches_) + ")"));
  }
}

IndexSpan EpochPlan::batch(int64_t b) const {
  check_batch(b);
  const int64_t first = b * batch_size_;
  const int64_t size = std::min(batch_size_, static_cast<int64_t>(indices_->size()) - first);
  return IndexSpan{indices_->data() + first, static_cast<size_t>(size),
                   repeats_->empty() ? nullptr : repeats_->data() + first};
}

int64_t EpochPlan::padding(int64_t b) const {
  const auto size = static_cast<int64_t>(batch(b).size);
  return size - std::clamp<int64_t>(unpadded_ - b * batch_size_, 0, size);
}

int64_t EpochPlan::global_position_after(int64_t b) const {
  check_batch(b);
  // Samples each rank has consumed; times W is at most R + W - 1, so this cannot overflow.
  const int64_t per_rank = std::min((b + 1) * batch_size_, static_cast<int64_t>(indices_->size()));
  return std::min(dataset_size_, start_ + per_rank * world_size_);
}

Sampler::Sampler(std::vector<int64_t> shard_records, SamplerOptions options)
    : shard_records_(std::move(shard_records)),
      dataset_size_(std::accumulate(shard_records_.begin(), shard_records_.end(), int64_t{0})),
      options_(options) {
  assert(dataset_size_ > 0 && options.batch_size > 0 && options.world_size > 0);
  assert(options.rank >= 0 && options.rank < options.world_size && options.shuffle_window >= 0);
  assert(options.repeats >= 1 && options.repeats <= INT32_MAX);
  assert(
      std::all_of(shard_records_.begin(), shard_records_.end(), [](int64_t c) { return c >= 0; }));
}

Sampler::Sampler(int64_t dataset_size, SamplerOptions options)
    : Sampler(std::vector<int64_t>{dataset_size}, options) {}

std::vector<int64_t> Sampler::order(int64_t epoch) const {
  if (epoch < 0)
    throw Error(invalid_argument("Sampler: epoch must be >= 0, got " + std::to_string(epoch)));
  std::vector<int64_t> order =
      options_.shuffle && options_.shuffle_window != kShuffleAll
          ? shard_window_order(options_.seed, epoch, options_.shuffle_window, shard_records_)
          : fisher_yates_order(dataset_size_, options_, epoch);
  // Each base sample `repeats` times in a row; backwards, so that order[q / k] is still unread.
  for (int64_t q = dataset_size_ - 1; q >= 0 && options_.repeats > 1; --q)
    order[q] = order[q / options_.repeats];
  return order;
}

EpochPlan Sampler::plan(int64_t epoch, int64_t start) const {
  if (epoch < 0 || start < 0) {
    throw Error(invalid_argument("Sampler: epoch and start must be >= 0, got epoch " +
                                 std::to_string(epoch) + ", start " + std::to_string(start)));
  }
  const int64_t n = dataset_size_;
  const int64_t w = options_.world_size;
  const int64_t r = options_.rank;
  const int64_t per_rank = samples_per_rank(start);
  const int64_t k = options_.repeats;
  std::vector<int64_t> indices;
  std::vector<int32_t> repeats;
  if (per_rank > 0) {
    const std::vector<int64_t> order = this->order(epoch);
    indices.resize(static_cast<size_t>(per_rank));
    if (k > 1) repeats.resize(static_cast<size_t>(per_rank));
    for (int64_t i = 0; i < per_rank; ++i) {
      // Positions past n (padding) wrap to the start of the order.
      const int64_t position = (start + i * w + r) % n;
      indices[i] = order[position];
      if (k > 1) repeats[i] = static_cast<int32_t>(position % k);
    }
  }
  return EpochPlan(epoch, start, n, options_.batch_size, w,
                   unpadded_samples(n, start, options_.rank, options_.world_size),
                   std::move(indices), std::move(repeats));
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
