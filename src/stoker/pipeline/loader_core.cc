#include "stoker/pipeline/loader_core.h"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <thread>

#include "stoker/pipeline/batch_engine.h"
#include "stoker/pipeline/order_registry.h"
#include "stoker/pipeline/schedule_from_order.h"
#include "stoker/pipeline/verified_set.h"
#include "stoker/pipeline/worker_tuner.h"
#include "stoker/util/machine.h"

namespace stoker {
namespace {

SamplerOptions sampler_options(const LoaderOptions& o) {
  SamplerOptions s;
  s.seed = o.seed;
  s.shuffle = o.shuffle;
  s.rank = o.rank;
  s.world_size = o.world_size;
  s.batch_size = o.batch_size;
  s.last_batch = o.last_batch;
  s.shuffle_window = o.shuffle_window;
  s.repeats = o.ra_reps;
  return s;
}

// The sampler of a loader over `dataset`: the order options name over its parts (each its
// shards' record counts, which shape a windowed order) or the one its shuffle window says.
// Throws Error (kInvalidArgument) for an order its parameters or the parts refuse.
Sampler make_sampler(const Dataset& dataset, const LoaderOptions& o) {
  std::vector<int64_t> shard_records;
  for (const ShardInfo& shard : dataset.manifest().shards)
    shard_records.push_back(static_cast<int64_t>(shard.records));
  if (o.order.empty()) return Sampler(std::move(shard_records), sampler_options(o));
  OrderInput input;
  input.seed = o.seed;
  input.shuffle = o.shuffle;
  size_t next = 0;
  for (const int shards : dataset.source().part_shards()) {
    input.parts.emplace_back(shard_records.begin() + static_cast<ptrdiff_t>(next),
                             shard_records.begin() + static_cast<ptrdiff_t>(next + shards));
    next += static_cast<size_t>(shards);
  }
  input.part_tokens = dataset.source().part_tokens();
  std::shared_ptr<const GlobalOrder> order =
      make_order(o.order, input, o.order_params).value_or_throw();
  // Records that are several samples already (a video folder's clips) are not dealt again.
  if (order->samples_per_record() > 1 && !dataset.manifest().sample_parts.empty())
    throw Error(invalid_argument(fmt::format("order '{}': {}'s records are {} already", o.order,
                                             dataset.dir(), dataset.manifest().sample_parts)));
  return Sampler(std::move(order), sampler_options(o));
}

// Tells a dataset whose shards are fetched (a remote one) epoch `e`'s order and the next
// epoch's (empty: not known), from which it has each shard's use in e and e + 1, and the
// positions the engine's window of batches may read ahead of the loader's position, which its
// cache keeps. The orders hold samples, `per_record` a record (schedule_from_order.h). The
// caller checks follows_plan() first.
void advise_dataset(const Dataset& dataset, int64_t e, const std::vector<int64_t>& order,
                    const std::vector<int64_t>& next_order, int64_t lookahead,
                    int64_t per_record = 1) {
  const std::vector<uint64_t>& starts = dataset.shard_starts();
  dataset.advise(
      schedule_from_order(e, order, next_order, std::vector<int64_t>(starts.begin(), starts.end()),
                          per_record),
      lookahead);
}

// The field of the largest slot, and the bytes of its slot: what a batch buffer too large for
// memory names.
std::string largest_slot(const BatchLayout& layout) {
  const BatchField* largest = nullptr;
  for (const BatchField& field : layout.fields())
    if (!largest || field.slot_bytes > largest->slot_bytes) largest = &field;
  return fmt::format("field '{}' takes {} bytes a sample{}", largest->name, largest->slot_bytes,
                     largest->variable ? " (its largest sample's)" : "");
}

// The batches the engine's window may hold (the prefetch depth and two), in samples per rank.
int64_t window_samples(const LoaderOptions& options) {
  return int64_t{options.prefetch + 2} * options.batch_size;
}

BatchLayout make_layout(const Dataset& dataset, const LoaderOptions& options) {
  Result<BatchLayout> layout =
      options.fields.empty()
          ? BatchLayout::copy_all(dataset.schema(), options.batch_transform,
                                  dataset.manifest().max_lengths)
          : BatchLayout::create(dataset.schema(), options.fields, options.batch_transform,
                                dataset.manifest().max_lengths);
  if (!layout.is_ok())
    throw Error(invalid_argument(dataset.dir() + ": " + layout.status().message()));
  return std::move(layout).value();
}

// The one check of a loader's options (the engine and the sampler assume it): each message
// names the option and its value.
LoaderOptions checked(LoaderOptions o, const Dataset& dataset, const BatchLayout& layout) {
  if (o.batch_size < 1)
    throw Error(
        invalid_argument(fmt::format("batch_size must be at least 1, not {}", o.batch_size)));
  throw_if_error(o.check());
  if (o.world_size < 1)
    throw Error(
        invalid_argument(fmt::format("world_size must be at least 1, not {}", o.world_size)));
  if (o.rank < 0 || o.rank >= o.world_size)
    throw Error(
        invalid_argument(fmt::format("rank must be in [0, {}], not {}", o.world_size - 1, o.rank)));
  if (o.last_batch == LastBatch::kPad && o.on_error == ErrorPolicy::kSkip)
    throw Error(invalid_argument(
        "last_batch 'pad' promises full batches, which on_error 'skip' would shorten"));
  if (dataset.size() == 0) throw Error(invalid_argument(dataset.dir() + ": the dataset is empty"));
  const size_t sample_bytes = layout.sample_bytes();
  if (static_cast<uint64_t>(o.batch_size) > kMaxBatchBytes / std::max<size_t>(sample_bytes, 1))
    throw Error(invalid_argument(fmt::format(
        "a batch of {} samples of {} bytes is more than the {} GiB a batch buffer may take: {}",
        o.batch_size, sample_bytes, kMaxBatchBytes >> 30, largest_slot(layout))));
  if (o.workers.mode() == WorkerCount::Mode::kPerCore) o.workers = auto_workers();
  return o;
}

// A tuned loader's tuner, with the budgets of `o` (whose workers and prefetch it then sets to
// the most the tuner may use); null for fixed workers. Resolves an auto prefetch.
std::unique_ptr<WorkerTuner> make_tuner(LoaderOptions& o, size_t batch_bytes) {
  const int within_memory = prefetch_within_memory(batch_bytes, machine_memory_bytes());
  const int auto_depth = std::min(auto_prefetch(batch_bytes), within_memory);
  if (!o.workers.is_tuned()) {
    if (o.prefetch == kAutoPrefetch) o.prefetch = auto_depth;
    return nullptr;
  }
  TunerOptions t;
  t.max_workers = o.tune.max_workers > 0 ? o.tune.max_workers : machine_cores();
  t.start_workers =
      std::min(o.tune.start_workers > 0 ? o.tune.start_workers : auto_workers(), t.max_workers);
  if (o.prefetch == kAutoPrefetch) {
    t.start_prefetch = auto_depth;
    t.max_prefetch = static_cast<int>(
        std::clamp<size_t>(o.tune.max_prefetch_bytes / std::max<size_t>(batch_bytes, 1),
                           static_cast<size_t>(auto_depth), static_cast<size_t>(within_memory)));
  } else {
    t.start_prefetch = t.max_prefetch = o.prefetch;
  }
  o.workers = t.max_workers;
  o.prefetch = t.max_prefetch;
  return std::make_unique<WorkerTuner>(t);
}

}  // namespace

const HostField& HostBatch::operator[](const std::string& name) const {
  for (const HostField& f : fields) {
    if (f.name == name) return f;
  }
  throw Error(invalid_argument("the batch has no field '" + name + "'"));
}

LoaderCore::LoaderCore(std::shared_ptr<const Dataset> dataset, LoaderOptions options,
                       HostAllocator allocator)
    : dataset_(std::move(dataset)),
      layout_(make_layout(*dataset_, options)),
      stats_(std::make_shared<PipelineStats>()) {
  if (const size_t parts = dataset_->source().part_shards().size(); parts > 1)
    stats_->part_samples = std::vector<std::atomic<int64_t>>(parts);
  options_ = checked(std::move(options), *dataset_, layout_);
  tuner_ = make_tuner(options_, layout_.sample_bytes() * static_cast<size_t>(options_.batch_size));
  Sampler sampler = make_sampler(*dataset_, options_);
  const uint64_t memory = machine_memory_bytes();  // 0: unknown
  // An epoch's order is made whole in memory (sampler.h), 8 bytes a sample, and an epoch holds
  // more than one such vector at a time (the order, this rank's plan, the next epoch's order):
  // an order that three times over is more than the machine's memory fails here, in one line,
  // not when the epoch starts (a video folder's clips at a high frame_rate).
  const double order_bytes = 24.0 * static_cast<double>(sampler.dataset_size());
  if (memory > 0 && order_bytes > static_cast<double>(memory))
    throw Error(invalid_argument(fmt::format(
        "{}: an epoch of {} samples, whose order takes {:.0f} bytes, is more than this machine's "
        "memory ({} bytes)",
        dataset_->dir(), sampler.dataset_size(), order_bytes, memory)));
  const size_t buffers = static_cast<size_t>(options_.prefetch) + 2;
  const double batch_bytes =
      static_cast<double>(layout_.sample_bytes()) * static_cast<double>(options_.batch_size);
  // One buffer larger than the machine's memory cannot be allocated (the rest are pages that
  // are touched only as samples fill them: variable fields' slots are their capacity).
  if (memory > 0 && batch_bytes > static_cast<double>(memory))
    throw Error(invalid_argument(fmt::format(
        "a batch buffer of {:.0f} bytes ({} samples of {} bytes) is more than this machine's "
        "memory: {}; lower the batch size, or leave the field out",
        batch_bytes, options_.batch_size, layout_.sample_bytes(), largest_slot(layout_))));
  pool_ = BufferPool::create(layout_, options_.batch_size, buffers, std::move(allocator));
  try {
    pool_->acquire();  // the first buffer, so that an impossible size fails here, not in a worker
  } catch (const std::bad_alloc&) {
    throw Error(invalid_argument(fmt::format("cannot allocate a batch buffer of {:.0f} bytes: {}",
                                             batch_bytes, largest_slot(layout_))));
  }
  EngineOptions engine;
  engine.workers = options_.workers.threads();
  engine.prefetch = options_.prefetch;
  engine.verify = options_.verify;
  engine.skip_errors = options_.on_error == ErrorPolicy::kSkip;
  engine.seed = options_.seed;
  engine.tracer = options_.tracer;
  engine_ = std::make_unique<BatchEngine>(dataset_, layout_, pool_, std::move(sampler), engine,
                                          stats_, std::make_shared<VerifiedSet>(dataset_->size()));
  if (tuner_) apply_tuning();
  for (const BatchField& f : layout_.fields()) {
    HostField h;
    h.name = f.name;
    h.dtype = f.dtype;
    h.shape = {options_.batch_size};
    h.shape.insert(h.shape.end(), f.sample_shape.begin(), f.sample_shape.end());
    h.strides.assign(h.shape.size(), 1);
    for (size_t d = h.shape.size() - 1; d > 0; --d) h.strides[d - 1] = h.strides[d] * h.shape[d];
    h.padded = f.padded;
    field_shapes_.push_back(std::move(h));
  }
  state_.seed = options_.seed;
  state_.shuffle_window = options_.shuffle_window;
  state_.ra_reps = options_.ra_reps;
}

LoaderCore::~LoaderCore() = default;

int64_t LoaderCore::batches_per_epoch() const {
  return make_sampler(*dataset_, options_).num_batches();
}

int64_t LoaderCore::epoch_samples() const {
  return make_sampler(*dataset_, options_).dataset_size();
}

EpochPlan LoaderCore::plan(int64_t e) const { return make_sampler(*dataset_, options_).plan(e); }

std::optional<TuningReport> LoaderCore::tuning() const {
  if (!tuner_) return std::nullopt;
  return tuner_->report();
}

void LoaderCore::apply_tuning() {
  engine_->set_active_workers(tuner_->workers());
  engine_->set_window(tuner_->prefetch());
}

void LoaderCore::observe_batch() {
  if (!tuner_ || tuner_->settled()) return;
  LoaderCounters now;
  now.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  now.wait_seconds = stats_->wait_ns.load(std::memory_order_relaxed) / 1e9;
  now.busy_seconds = stats_->busy_ns.load(std::memory_order_relaxed) / 1e9;
  if (tuner_->on_batch(now)) apply_tuning();
}

size_t LoaderCore::buffer_bytes() const {
  return pool_->allocations() * layout_.sample_bytes() * static_cast<size_t>(options_.batch_size);
}

void LoaderCore::restore(const LoaderState& state) {
  if (epoch_live_)
    throw Error(invalid_argument("cannot restore a loader while one of its epochs is live"));
  if (state.seed != options_.seed)
    throw Error(
        invalid_argument(fmt::format("cannot restore a loader state of seed {} into a loader "
                                     "of seed {}",
                                     state.seed, options_.seed)));
  if (state.shuffle_window != options_.shuffle_window)
    throw Error(invalid_argument(fmt::format(
        "cannot restore a loader state of shuffle window {} into a loader of shuffle window {}",
        shuffle_window_text(state.shuffle_window), shuffle_window_text(options_.shuffle_window))));
  if (state.ra_reps != options_.ra_reps)
    throw Error(invalid_argument(
        fmt::format("cannot restore a loader state of ra_reps {} into a loader of ra_reps {}",
                    state.ra_reps, options_.ra_reps)));
  if (state.epoch < 0 || state.epoch > kMaxEpoch || state.position < 0) {
    throw Error(invalid_argument(fmt::format(
        "a loader state's epoch must be in [0, {}] and its position >= 0, not {} and {}", kMaxEpoch,
        state.epoch, state.position)));
  }
  state_ = state;
}

void LoaderCore::check_epoch_start(int64_t e) const {
  if (epoch_live_)
    throw Error(invalid_argument(
        "a loader has one live epoch at a time: finish or destroy the previous one first"));
  if (e < 0 || e > kMaxEpoch)
    throw Error(invalid_argument(fmt::format("epoch must be in [0, {}], not {}", kMaxEpoch, e)));
}

LoaderCore::Epoch LoaderCore::begin_epoch() {
  if (tuner_) tuner_->pause();  // the time since the last batch was the consumer's own
  epoch_batches_ = engine_->num_batches();
  epoch_live_ = true;
  return Epoch(this);
}

LoaderCore::Epoch LoaderCore::epoch(int64_t e) {
  check_epoch_start(e);
  const int64_t start = e == state_.epoch ? state_.position : 0;
  if (dataset_->follows_plan()) {  // all ranks' positions: they share the order
    // The engine's order (its sampler is this one's twin): each epoch's computed once.
    const Sampler sampler = make_sampler(*dataset_, options_);
    std::vector<int64_t> samples = sampler.samples(e), next = sampler.samples(e + 1);
    advise_dataset(*dataset_, e, samples, next, window_samples(options_) * options_.world_size,
                   sampler.samples_per_record());
    dataset_->advance(start);
    engine_->start(e, start, std::move(samples), std::move(next));
  } else {
    dataset_->advance(start);
    engine_->start(e, start);
  }
  return begin_epoch();
}

LoaderCore::Epoch LoaderCore::epoch(int64_t e, ExplicitBatches batches) {
  check_epoch_start(e);
  EpochPlan plan = EpochPlan::of_batches(
      e, std::move(batches), static_cast<int64_t>(dataset_->size()), options_.batch_size);
  if (dataset_->follows_plan()) {  // this rank's positions in its own sequence
    const IndexSpan sequence = plan.sequence();
    advise_dataset(*dataset_, e, std::vector<int64_t>(sequence.begin(), sequence.end()), {},
                   window_samples(options_));
  }
  dataset_->advance(plan.start());
  engine_->start(std::move(plan));
  return begin_epoch();
}

LoaderCore::Epoch::Epoch(Epoch&& other) noexcept
    : loader_(other.loader_), taken_(other.taken_), good_(other.good_) {
  other.loader_ = nullptr;
}

LoaderCore::Epoch::~Epoch() {
  if (loader_) loader_->epoch_live_ = false;
}

int64_t LoaderCore::Epoch::size() const { return loader_->epoch_batches_; }

bool LoaderCore::Epoch::next(HostBatch& out) {
  while (deliver(loader_->engine_->next(), out))
    if (keep(out)) return true;
  return false;
}

LoaderCore::Epoch::Next LoaderCore::Epoch::next_for(HostBatch& out,
                                                    std::chrono::nanoseconds timeout,
                                                    const std::function<bool()>& interrupted) {
  // An engine that builds inline never waits: no clock read for a deadline it cannot pass.
  const auto deadline = loader_->engine_->builds_inline()
                            ? std::chrono::steady_clock::time_point::max()
                            : std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool timed_out = false;
    std::shared_ptr<BatchBuffer> buffer =
        loader_->engine_->next_until(deadline, &timed_out, interrupted);
    if (timed_out) return Next::kTimedOut;
    if (!deliver(std::move(buffer), out)) return Next::kEnd;
    if (keep(out)) return Next::kBatch;
  }
}

bool LoaderCore::Epoch::keep(const HostBatch& out) {
  const LoaderOptions& o = loader_->options_;
  ++taken_;
  if (out.size > 0 || o.on_error != ErrorPolicy::kSkip) {
    good_ = true;
    return true;
  }
  if (o.world_size > 1)
    throw Error(corrupt(fmt::format(
        "on_error='skip': every record of batch {} of epoch {} of {} on rank {} was bad, and "
        "leaving the batch out would give this rank fewer batches than its {} peers (which "
        "would wait for it): remove the bad records (on_error='raise' names the first and why)",
        out.index, out.epoch, loader_->dataset_->dir(), o.rank, o.world_size - 1)));
  if (!good_ && taken_ * o.batch_size >= kAllBadRecords) throw_none_good(out.epoch);
  return false;
}

void LoaderCore::Epoch::throw_none_good(int64_t e) const {
  throw Error(corrupt(
      fmt::format("on_error='skip': no record of epoch {} of {} was good in its first {} batches "
                  "(all left out): check the data (on_error='raise' names the first bad record "
                  "and why)",
                  e, loader_->dataset_->dir(), taken_)));
}

bool LoaderCore::Epoch::deliver(std::shared_ptr<BatchBuffer> buffer, HostBatch& out) {
  if (!buffer) {
    if (taken_ > 0 && !good_) throw_none_good(loader_->state_.epoch - 1);
    return false;
  }
  loader_->observe_batch();
  throw_if_error(buffer->status);
  const std::vector<HostField>& shapes = loader_->field_shapes_;
  out.fields.resize(shapes.size());
  for (size_t f = 0; f < shapes.size(); ++f) {
    HostField& field = out.fields[f];
    field = shapes[f];
    field.shape[0] = buffer->size;
    field.data = buffer->fields[f].get();
    if (const std::vector<int64_t>& largest = buffer->largest[f]; !largest.empty()) {
      std::copy(largest.begin(), largest.end(), field.shape.begin() + 1);
      for (size_t d = field.shape.size() - 1; d > 1; --d)
        field.strides[d - 1] = field.strides[d] * field.shape[d];
      field.sizes = buffer->shapes[f].data();
    }
  }
  out.size = buffer->size;
  out.epoch = buffer->epoch;
  out.index = buffer->batch;
  out.skipped = buffer->skipped;
  out.padding = buffer->padding;
  out.records = buffer->records;
  LoaderState& state = loader_->state_;
  if (buffer->batch + 1 == loader_->epoch_batches_) {
    state.epoch = buffer->epoch + 1;
    state.position = 0;
  } else {
    state.epoch = buffer->epoch;
    state.position = buffer->position_after;
  }
  loader_->dataset_->advance(buffer->position_after);
  out.owner = std::move(buffer);
  return true;
}

}  // namespace stoker
