#include "stoker/pipeline/batch_engine.h"

#include <pthread.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstring>
#include <exception>
#include <optional>

#include "stoker/pipeline/variable_samples.h"
#include "stoker/util/mapped_read_guard.h"

namespace stoker {
namespace {

// The tracer's clock, so that the stage times below are also the spans' times.
int64_t now_ns() { return Tracer::now_ns(); }

// Its options as LoaderCore checked them (the one check, loader_core.h), asserted here.
const EngineOptions& checked(const EngineOptions& o, const VerifiedSet* verified) {
  assert(o.workers >= 0 && o.workers <= kMaxWorkers);
  assert(o.prefetch >= 1 && o.prefetch <= kMaxPrefetch);
  assert(o.verify != VerifyPolicy::kOnce || verified);
  (void)verified;
  return o;
}

}  // namespace

BatchEngine::BatchEngine(std::shared_ptr<const Dataset> dataset, BatchLayout layout,
                         std::shared_ptr<BufferPool> pool, Sampler sampler, EngineOptions options,
                         std::shared_ptr<PipelineStats> stats,
                         std::shared_ptr<VerifiedSet> verified)
    : dataset_(std::move(dataset)),
      layout_(std::move(layout)),
      pool_(std::move(pool)),
      sampler_(std::move(sampler)),
      options_(checked(options, verified.get())),
      pieces_(static_cast<int>(
          std::clamp<int64_t>(options_.workers, 1, sampler_.options().batch_size))),
      stats_(std::move(stats)),
      verified_(std::move(verified)),
      active_(options_.workers),
      window_(options_.prefetch) {
  try {
    for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this, i] { work(i); });
  } catch (...) {  // std::system_error: joinable threads must not be destroyed
    stop();
    throw;
  }
}

BatchEngine::~BatchEngine() { stop(); }

void BatchEngine::stop() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1);
  }
  work_cv_.notify_all();
  idle_cv_.notify_all();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
}

const BatchEngine::Scheduled& BatchEngine::scheduled(int64_t seq) const {
  return plans_.size() > 1 && seq >= plans_[1].first_seq ? plans_[1] : plans_[0];
}

int64_t BatchEngine::end_seq() const {
  if (plans_.empty()) return 0;
  return plans_.back().first_seq + plans_.back().plan.num_batches();
}

int64_t BatchEngine::num_batches() const {
  MutexLock lock(mutex_);
  return plans_.empty() ? 0 : plans_.front().plan.num_batches();
}

void BatchEngine::start(int64_t epoch, int64_t position) { start(epoch, position, {}, {}); }

void BatchEngine::start(int64_t epoch, int64_t position, std::vector<int64_t> samples,
                        std::vector<int64_t> next_samples) {
  // An epoch's samples are never empty (a dataset has records): empty, not given.
  const auto plan_of = [this](int64_t e, int64_t p, std::vector<int64_t> given) {
    return given.empty() ? sampler_.plan(e, p) : sampler_.plan(e, p, std::move(given));
  };
  {
    MutexLock lock(mutex_);
    const bool keep = plans_.size() == 2 && plans_[1].plan.epoch() == epoch &&
                      plans_[1].plan.start() == position && next_deliver_ == plans_[1].first_seq;
    // Both plans before any change: a build cancelled (kCancelled) leaves the engine as it was.
    // Each epoch's samples are let go once its plan is built.
    std::optional<EpochPlan> plan, next;
    if (!keep) plan.emplace(plan_of(epoch, position, std::move(samples)));
    samples = {};
    if (options_.workers > 0) next.emplace(plan_of(epoch + 1, 0, std::move(next_samples)));
    if (keep) {
      plans_.pop_front();
    } else {
      replace_plans(std::move(*plan));
    }
    if (next) plans_.push_back({std::move(*next), end_seq()});
    start_wait_ns_ = 0;
  }
  work_cv_.notify_all();
}

void BatchEngine::start(EpochPlan plan) {
  {
    MutexLock lock(mutex_);
    replace_plans(std::move(plan));
    start_wait_ns_ = 0;
  }
  work_cv_.notify_all();
}

void BatchEngine::replace_plans(EpochPlan plan) {
  // Workers mid-piece see the new generation and give up.
  generation_.fetch_add(1);
  const int64_t first = end_seq();
  plans_.clear();
  ready_.clear();
  pieces_left_.clear();
  opening_.reset();
  next_deliver_ = next_open_ = first;
  plans_.push_back({std::move(plan), first});
}

void BatchEngine::set_active_workers(int workers) {
  if (options_.workers == 0) return;
  workers = std::clamp(workers, 1, options_.workers);
  {
    MutexLock lock(mutex_);
    if (workers == active_) return;
    active_ = workers;
  }
  trace_counter(options_.tracer, "pipeline", "active_workers", workers);
  // Raised: the newly active ones leave idle_cv_. Lowered: the newly inactive ones sleeping on
  // work_cv_ move to idle_cv_, so that a later notify_one there always reaches an active one.
  idle_cv_.notify_all();
  work_cv_.notify_all();
}

void BatchEngine::set_window(int prefetch) {
  prefetch = std::clamp(prefetch, 1, options_.prefetch);
  {
    MutexLock lock(mutex_);
    if (prefetch == window_) return;
    window_ = prefetch;
  }
  work_cv_.notify_all();
}

bool BatchEngine::piece_available() const {
  return opening_ != nullptr ||
         (!allocating_ && next_open_ < end_seq() && next_open_ < next_deliver_ + window_);
}

std::shared_ptr<BatchBuffer> BatchEngine::new_buffer() {
  try {
    return pool_->acquire();
  } catch (const std::exception& e) {
    auto failed = std::make_shared<BatchBuffer>();
    failed->status =
        Status(StatusCode::kInternal, std::string("allocating a batch buffer: ") + e.what());
    return failed;
  }
}

BatchEngine::Piece BatchEngine::take_piece(std::shared_ptr<BatchBuffer> opened) {
  if (!opening_) {
    const Scheduled& s = scheduled(next_open_);
    opening_ = std::move(opened);
    BatchBuffer& buffer = *opening_;
    buffer.epoch = s.plan.epoch();
    buffer.batch = next_open_ - s.first_seq;
    buffer.position_after = s.plan.global_position_after(buffer.batch);
    const IndexSpan records = s.plan.batch(buffer.batch);
    buffer.size = static_cast<int64_t>(records.size);
    buffer.records.assign(records.begin(), records.end());
    s.plan.prefetch(buffer.batch + 1);
    buffer.padding = s.plan.padding(buffer.batch);
    clear_working_state(buffer);
    pieces_left_[next_open_] = pieces_;
    next_piece_ = 0;
    ++next_open_;
  }
  Piece piece;
  piece.seq = next_open_ - 1;
  piece.piece = next_piece_++;
  const Scheduled& s = scheduled(piece.seq);
  piece.plan = s.plan;
  piece.batch = piece.seq - s.first_seq;
  piece.generation = generation_.load(std::memory_order_relaxed);
  piece.buffer = opening_;
  if (next_piece_ == pieces_) opening_.reset();
  return piece;
}

void BatchEngine::clear_working_state(BatchBuffer& buffer) const {
  buffer.failed.assign(static_cast<size_t>(buffer.capacity), 0);
  buffer.piece_status.assign(static_cast<size_t>(pieces_), Status::ok());
  buffer.piece_counters.assign(static_cast<size_t>(pieces_), SampleCounters{});
}

void BatchEngine::trace_span(const char* name, int64_t start_ns, int64_t end_ns) const {
  if (options_.tracer != nullptr) options_.tracer->complete("pipeline", name, start_ns, end_ns);
}

std::pair<size_t, size_t> BatchEngine::piece_range(size_t n, int p) const {
  return {n * p / pieces_, n * (p + 1) / pieces_};
}

void BatchEngine::work(int index) {
  pthread_setname_np(pthread_self(), "stoker-worker");
  Scratch scratch;
  MutexLock lock(mutex_);
  while (true) {
    lock.wait(idle_cv_, [&]() STOKER_REQUIRES(mutex_) { return stopping_ || index < active_; });
    ++sleeping_;
    lock.wait(work_cv_, [&]() STOKER_REQUIRES(mutex_) {
      return stopping_ || index >= active_ || piece_available();
    });
    --sleeping_;
    if (stopping_) return;
    if (index >= active_) continue;
    // The buffer of a batch to open: a recycled one is taken under the lock; a new one is
    // allocated outside it (a page-locked allocator takes milliseconds while the other workers
    // build the open batch's pieces), and then the wait's conditions are checked again.
    std::shared_ptr<BatchBuffer> buffer;
    if (!opening_ && !(buffer = pool_->acquire_idle())) {
      allocating_ = true;
      lock.unlock();
      buffer = new_buffer();
      lock.lock();
      allocating_ = false;
      if (sleeping_ > 0) work_cv_.notify_all();  // batches may open again
      if (stopping_ || index >= active_ || !piece_available()) {
        lock.unlock();
        buffer.reset();  // back to the pool outside the lock too (a caller's free may be slow)
        lock.lock();
        continue;
      }
    }
    Piece piece = take_piece(std::move(buffer));
    // A newly opened batch has pieces for sleeping workers too.
    const int wake = piece.piece == 0 ? std::min(sleeping_, pieces_ - 1) : 0;
    lock.unlock();
    for (int i = 0; i < wake; ++i) work_cv_.notify_one();
    const int64_t start = now_ns();
    const bool built = build_piece(piece, scratch);
    lock.lock();
    if (!built || cancelled(piece.generation)) continue;
    if (--pieces_left_[piece.seq] > 0) {
      const int64_t end = now_ns();
      stats_->busy_ns += end - start;
      trace_span("piece", start, end);
      continue;
    }
    pieces_left_.erase(piece.seq);
    lock.unlock();
    const int64_t built_ns = now_ns();
    finalize(*piece.buffer);
    const int64_t end = now_ns();
    stats_->busy_ns += end - start;
    trace_span("finalize", built_ns, end);
    trace_span("piece", start, end);
    lock.lock();
    if (cancelled(piece.generation)) continue;
    ready_[piece.seq] = std::move(piece.buffer);
    ready_cv_.notify_all();
  }
}

bool BatchEngine::build_piece(const Piece& piece, Scratch& scratch,
                              const std::function<bool()>& interrupted) {
  BatchBuffer& buffer = *piece.buffer;
  if (!buffer.status.is_ok()) return true;  // failed before any piece was built
  const IndexSpan indices = piece.plan.batch(piece.batch);
  const auto [begin, end] = piece_range(indices.size, piece.piece);
  Status& status = buffer.piece_status[piece.piece];
  uint8_t* failed = options_.skip_errors ? buffer.failed.data() : nullptr;
  const auto is_cancelled = [&] {
    return cancelled(piece.generation) || (interrupted && interrupted());
  };
  // Pass 0: the piece's shards pinned (fetched first where they are not at hand), held until the
  // end of the piece. Free for a dataset that needs no pins, untimed too.
  ShardPins pins;
  int64_t t0;  // pass 1's start: the fetch's end where there is one (a clock read less)
  if (dataset_->needs_pins()) {
    const int64_t f0 = now_ns();
    const auto is_awaited = [&] {
      MutexLock lock(mutex_);
      return piece.seq == next_deliver_;
    };
    Result<ShardPins> pinned =
        dataset_->pin(indices.data + begin, end - begin, is_cancelled, is_awaited);
    const int64_t f1 = t0 = now_ns();
    stats_->fetch_ns += f1 - f0;
    trace_span("fetch", f0, f1);
    if (is_cancelled()) return false;
    if (!pinned.is_ok()) {  // fails the batch under either policy, as a changed shard does
      status = pinned.status();
      return true;
    }
    pins = std::move(pinned).value();
  } else {
    t0 = now_ns();
  }
  // A shard shrunk under this read reads as zeros here instead of raising SIGBUS, when the
  // process installed the handler (mapped_read_guard.h); checked after the transforms.
  MappedReadGuard guard;

  // Pass 1: resolve records, check the checksums due and refuse the records found bad when read
  // in place (ShardReader::bad), whatever fields are read. Under the raise policy a failure
  // ends the piece there; under skip it marks the sample.
  scratch.records.resize(indices.size);
  scratch.viewed.resize(indices.size);
  scratch.parts.assign(indices.size, 0);
  size_t resolved_end = end;
  Status refused;
  // Sample k failed with `error`: whether the piece ends there (raise).
  const auto fails = [&](size_t k, Status error) {
    if (failed) {
      failed[k] = 1;
      return false;
    }
    refused = std::move(error);
    resolved_end = k;
    return true;
  };
  for (size_t k = begin; k < end; ++k) {
    if (is_cancelled()) return false;
    const int64_t i = indices[k];
    const bool check = options_.verify == VerifyPolicy::kAlways ||
                       (options_.verify == VerifyPolicy::kOnce && !verified_->contains(i));
    if (check) {
      dataset_->prefetch_ahead(indices.data + begin, end - begin, k - begin);
      Status verified = dataset_->verify_record(i);
      if (!verified.is_ok()) {
        if (fails(k, std::move(verified))) break;
        continue;
      }
      if (verified_) verified_->insert(i);
    } else if (k + Dataset::kPrefetchDistance < end) {
      dataset_->prefetch_index(indices[k + Dataset::kPrefetchDistance]);
    }
    const Dataset::Location at = dataset_->locate(static_cast<uint64_t>(i));
    const ShardReader& reader = dataset_->shard(at.shard);
    if (reader.bad(at.record)) {
      if (fails(k, dataset_->found_bad(i))) break;
      continue;
    }
    // A record read in place (a token file's sample) is passed as its views alone where every
    // field copies them: widened straight into the batch, no record built.
    scratch.viewed[k] = {reader.views(), at.record};
    // Such a sample is a page or so at a random place: its first line asked for now overlaps
    // its address translation and first miss with resolving the rest (write_samples brings in
    // the rest of each while the one before is widened; measured 5-8% faster).
    if (reader.views()) reader.views()->prefetch_first(at.record);
    // A record's part: the order's (a "per_record" order's occurrence), else its reader's.
    scratch.parts[k] = indices.parts ? indices.part(k) : reader.part(at.record);
    scratch.records[k] =
        reader.views() && layout_.copies_views() ? ByteSpan{} : reader.record(at.record);
  }
  const int64_t t1 = now_ns();

  // Pass 2: the fields' transforms, straight into the buffer.
  scratch.field_dst.clear();
  for (const auto& block : buffer.fields) scratch.field_dst.push_back(block.get());
  scratch.field_shapes.clear();
  for (auto& shapes : buffer.shapes) scratch.field_shapes.push_back(shapes.data());
  size_t at = 0;
  Status written = layout_.write_samples(
      scratch.records.data(), indices, begin, resolved_end, buffer.epoch, options_.seed,
      scratch.field_dst.data(), failed, &at, is_cancelled, scratch.field_shapes.data(),
      scratch.viewed.data(), &buffer.piece_counters[piece.piece], scratch.parts.data());
  if (is_cancelled()) return false;
  // A shard that shrank fails the batch under either policy (what was read of it is zeros): the
  // dataset changed under the run, not one record.
  Status unchanged = changed_shard_error(indices.data + begin, end - begin);
  if (!unchanged.is_ok()) {
    status = std::move(unchanged);
  } else if (!failed) {  // raise: the piece's first failure, in sample order
    if (!written.is_ok()) {
      status = dataset_->record_error(indices[at], written);
    } else if (!refused.is_ok()) {
      status = std::move(refused);
    }
  }
  const int64_t t2 = now_ns();
  stats_->read_ns += t1 - t0;
  stats_->transform_ns += t2 - t1;
  trace_span("read", t0, t1);
  trace_span("transform", t1, t2);
  return true;
}

Status BatchEngine::changed_shard_error(const int64_t* records, size_t n) const {
  if (!any_mapped_file_changed()) return Status::ok();
  for (size_t k = 0; k < n; ++k) {
    // A record's bytes lie in its shard's mapping (its index entry, if read as zeros, too).
    if (mapped_file_changed(dataset_->record_start(static_cast<uint64_t>(records[k]))))
      return dataset_->record_error(records[k], io_error(kChangedSizeText));
  }
  return Status::ok();
}

void BatchEngine::count_delivered(const BatchBuffer& buffer) const {
  stats_->skipped += buffer.skipped;
  if (std::vector<std::atomic<int64_t>>& parts = stats_->part_samples; !parts.empty()) {
    const EpochPlan& plan = scheduled(next_deliver_ - 1).plan;
    const IndexSpan indices = plan.batch(buffer.batch);
    const std::vector<uint64_t>& starts = dataset_->shard_starts();
    std::vector<uint64_t> part_ends;  // each part's records' end
    int shard = 0;
    for (const int shards : dataset_->source().part_shards())
      part_ends.push_back(starts[static_cast<size_t>(shard += shards)]);
    const size_t real = indices.size - static_cast<size_t>(plan.padding(buffer.batch));
    for (size_t k = 0; k < real; ++k) {
      if (buffer.failed[k]) continue;
      const auto index = static_cast<uint64_t>(indices[k]);
      parts[static_cast<size_t>(std::upper_bound(part_ends.begin(), part_ends.end(), index) -
                                part_ends.begin())] += 1;
    }
  }
  for (const SampleCounters& c : buffer.piece_counters) {
    stats_->video_frames_decoded += c.video_frames_decoded;
    stats_->video_frames_delivered += c.video_frames_delivered;
  }
}

void BatchEngine::finalize(BatchBuffer& buffer) const {
  if (!buffer.status.is_ok()) return;
  for (const Status& s : buffer.piece_status) {
    if (!s.is_ok()) {
      buffer.status = s;
      return;
    }
  }
  if (options_.skip_errors) {
    const size_t n = static_cast<size_t>(buffer.size);
    const size_t first_padded = n - static_cast<size_t>(buffer.padding);
    size_t kept = 0;
    for (size_t k = 0; k < n; ++k) {
      if (buffer.failed[k]) {
        if (k >= first_padded) --buffer.padding;  // the tail stays the padding that was kept
        continue;
      }
      if (kept != k) {
        buffer.records[kept] = buffer.records[k];
        const auto& fields = layout_.fields();
        for (size_t f = 0; f < fields.size(); ++f) {
          const size_t bytes = fields[f].slot_bytes;
          std::memmove(buffer.fields[f].get() + kept * bytes, buffer.fields[f].get() + k * bytes,
                       bytes);
          if (std::vector<int64_t>& shapes = buffer.shapes[f]; !shapes.empty()) {
            const size_t rank = fields[f].sample_shape.size();
            std::copy_n(shapes.begin() + k * rank, rank, shapes.begin() + kept * rank);
          }
        }
      }
      ++kept;
    }
    buffer.skipped = static_cast<int64_t>(n - kept);
    buffer.size = static_cast<int64_t>(kept);
    buffer.records.resize(kept);
  }
  if (layout_.any_variable()) arrange_variable(buffer);
  if (const auto& batch = layout_.batch_transform(); batch && buffer.size > 0) {
    BatchInput input;
    input.size = buffer.size;
    input.epoch = buffer.epoch;
    input.position = buffer.position_after;
    input.rank = sampler_.options().rank;
    input.seed = options_.seed;
    const auto& fields = layout_.fields();
    for (size_t f = 0; f < fields.size(); ++f)
      input.fields.push_back({&fields[f].written, buffer.fields[f].get(), fields[f].slot_bytes});
    try {
      buffer.status = batch->apply(input);
    } catch (const std::exception& e) {
      buffer.status =
          Status(StatusCode::kInternal, std::string("the batch transform threw: ") + e.what());
    } catch (...) {
      buffer.status =
          Status(StatusCode::kInternal, "the batch transform threw a non-standard exception");
    }
    if (!buffer.status.is_ok()) return;
  }
  stats_->batches += 1;
  stats_->samples += buffer.size;
}

void BatchEngine::arrange_variable(BatchBuffer& buffer) const {
  const auto& fields = layout_.fields();
  for (size_t f = 0; f < fields.size(); ++f) {
    if (!fields[f].variable) continue;
    const size_t rank = fields[f].sample_shape.size();
    largest_shape(buffer.shapes[f].data(), rank, buffer.size, buffer.largest[f].data());
    if (fields[f].padded)
      pad_samples(buffer.fields[f].get(), fields[f].slot_bytes, dtype_size(fields[f].dtype),
                  buffer.shapes[f].data(), rank, buffer.size, buffer.largest[f].data());
  }
}

std::shared_ptr<BatchBuffer> BatchEngine::next() { return take_next(std::nullopt, nullptr, {}); }

std::shared_ptr<BatchBuffer> BatchEngine::next_until(std::chrono::steady_clock::time_point deadline,
                                                     bool* timed_out,
                                                     const std::function<bool()>& interrupted) {
  return take_next(deadline, timed_out, interrupted);
}

std::shared_ptr<BatchBuffer> BatchEngine::take_next(
    const std::optional<std::chrono::steady_clock::time_point>& deadline, bool* timed_out,
    const std::function<bool()>& interrupted) {
  if (timed_out) *timed_out = false;
  MutexLock lock(mutex_);
  if (plans_.empty() ||
      next_deliver_ >= plans_.front().first_seq + plans_.front().plan.num_batches())
    return nullptr;
  const bool first_of_epoch = next_deliver_ == plans_.front().first_seq;
  if (options_.workers == 0) {
    if (inline_pending_ && cancelled(inline_pending_->generation)) inline_pending_.reset();
    Piece piece;
    if (inline_pending_) {
      piece = *std::move(inline_pending_);
      inline_pending_.reset();
      clear_working_state(*piece.buffer);
    } else {
      piece = take_piece(new_buffer());
      pieces_left_.erase(piece.seq);
    }
    lock.unlock();
    // The piece's span, where traced (no clock reads else: build_piece times its parts).
    const int64_t start = options_.tracer ? now_ns() : 0;
    if (!build_piece(piece, inline_scratch_, interrupted)) {
      inline_pending_ = std::move(piece);
      if (timed_out) *timed_out = true;
      return nullptr;
    }
    finalize(*piece.buffer);
    if (options_.tracer) trace_span("piece", start, now_ns());
    lock.lock();
    ++next_deliver_;
    count_delivered(*piece.buffer);
    return std::move(piece.buffer);
  }
  auto it = ready_.find(next_deliver_);
  int64_t waited = 0;
  if (it == ready_.end()) {
    const int64_t start = now_ns();
    const auto ready = [&]() STOKER_REQUIRES(mutex_) {
      return (it = ready_.find(next_deliver_)) != ready_.end();
    };
    bool is_ready = true;
    if (deadline) {
      is_ready = lock.wait_until(ready_cv_, *deadline, ready);
    } else {
      lock.wait(ready_cv_, ready);
    }
    const int64_t end = now_ns();
    waited = end - start;
    stats_->wait_ns += waited;
    trace_span("wait", start, end);
    if (!is_ready) {
      if (first_of_epoch) start_wait_ns_ += waited;
      *timed_out = true;
      return nullptr;
    }
  }
  if (first_of_epoch) {
    stats_->epoch_start_wait_ns.push_back(start_wait_ns_ + waited);
    start_wait_ns_ = 0;
  }
  std::shared_ptr<BatchBuffer> buffer = std::move(it->second);
  ready_.erase(it);
  ++next_deliver_;
  count_delivered(*buffer);
  const int64_t free_slots = next_deliver_ + window_ - next_open_;
  const int window = window_;
  const int active = active_;
  const size_t ready_count = ready_.size();
  lock.unlock();
  trace_counter(options_.tracer, "pipeline", "ready_batches", static_cast<double>(ready_count));
  if (free_slots >= std::max(1, window / 2)) {
    // One sleeping worker per free piece: a worker woken for nothing costs a wake-up too.
    const int64_t pieces = free_slots * pieces_;
    if (pieces >= active) {
      work_cv_.notify_all();
    } else {
      for (int64_t i = 0; i < pieces; ++i) work_cv_.notify_one();
    }
  }
  return buffer;
}

}  // namespace stoker
