#include "stoker/pipeline/batch_engine.h"

#include <chrono>
#include <exception>

namespace stoker {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<VerifyPolicy> parse_verify_policy(const std::string& name) {
  if (name == "always") return VerifyPolicy::kAlways;
  if (name == "once") return VerifyPolicy::kOnce;
  if (name == "off") return VerifyPolicy::kOff;
  return invalid_argument("verify policy '" + name + "' is not one of always, once, off");
}

BatchEngine::BatchEngine(std::shared_ptr<const Dataset> dataset, const BatchLayout& layout,
                         std::shared_ptr<BufferPool> pool, EpochPlan plan, EngineOptions options,
                         std::shared_ptr<PipelineStats> stats,
                         std::shared_ptr<VerifiedSet> verified)
    : dataset_(std::move(dataset)),
      layout_(layout),
      pool_(std::move(pool)),
      plan_(std::move(plan)),
      options_(options),
      stats_(std::move(stats)),
      verified_(std::move(verified)) {
  if (options_.verify == VerifyPolicy::kOnce && !verified_)
    throw Error(invalid_argument("VerifyPolicy::kOnce needs a VerifiedSet"));
  try {
    for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { work(); });
  } catch (...) {  // std::system_error: joinable threads must not be destroyed
    stop();
    throw;
  }
}

BatchEngine::~BatchEngine() { stop(); }

void BatchEngine::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
}

void BatchEngine::work() {
  Scratch scratch;
  while (true) {
    int64_t b;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] {
        return cancelled_ || next_assign_ >= plan_.num_batches() ||
               next_assign_ < next_deliver_ + options_.prefetch;
      });
      if (cancelled_ || next_assign_ >= plan_.num_batches()) return;
      b = next_assign_++;
    }
    std::shared_ptr<BatchBuffer> buffer;
    try {
      buffer = pool_->acquire();
      build(b, *buffer, scratch);
    } catch (const std::exception& e) {
      buffer = std::make_shared<BatchBuffer>();
      buffer->batch = b;
      buffer->status = Status(StatusCode::kInternal, std::string("building a batch: ") + e.what());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_[b] = std::move(buffer);
    }
    ready_cv_.notify_all();
  }
}

std::shared_ptr<BatchBuffer> BatchEngine::next() {
  if (options_.workers == 0) {
    if (next_deliver_ >= plan_.num_batches()) return nullptr;
    auto buffer = pool_->acquire();
    build(next_deliver_++, *buffer, inline_scratch_);
    return buffer;
  }
  std::shared_ptr<BatchBuffer> buffer;
  int64_t free_slots;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (next_deliver_ >= plan_.num_batches()) return nullptr;
    auto it = ready_.find(next_deliver_);
    if (it == ready_.end()) {
      const int64_t start = now_ns();
      ready_cv_.wait(lock, [&] { return (it = ready_.find(next_deliver_)) != ready_.end(); });
      stats_->wait_ns += now_ns() - start;
    }
    buffer = std::move(it->second);
    ready_.erase(it);
    ++next_deliver_;
    free_slots = next_deliver_ + options_.prefetch - next_assign_;
  }
  if (free_slots >= wake_room()) {
    // One sleeping worker per free slot: a worker woken for nothing costs a wake-up too.
    if (free_slots >= options_.workers) {
      work_cv_.notify_all();
    } else {
      for (int64_t i = 0; i < free_slots; ++i) work_cv_.notify_one();
    }
  }
  return buffer;
}

void BatchEngine::build(int64_t b, BatchBuffer& buffer, Scratch& scratch) {
  const IndexSpan indices = plan_.batch(b);
  buffer.epoch = plan_.epoch();
  buffer.batch = b;
  buffer.position_after = plan_.global_position_after(b);

  const int64_t t0 = now_ns();
  std::vector<const uint8_t*>& records = scratch.records;
  records.clear();
  for (size_t k = 0; k < indices.size; ++k) {
    if (cancelled_.load(std::memory_order_relaxed)) {
      buffer.status = Status(StatusCode::kCancelled, "loader stopped");
      return;
    }
    const int64_t i = indices[k];
    const bool check = options_.verify == VerifyPolicy::kAlways ||
                       (options_.verify == VerifyPolicy::kOnce && !verified_->contains(i));
    if (check) {
      dataset_->prefetch_ahead(indices.data, indices.size, k);
      Status status = dataset_->verify_record(i);
      if (!status.is_ok()) {
        if (!options_.skip_errors) {
          buffer.status = std::move(status);
          return;
        }
        ++buffer.skipped;
        continue;
      }
      if (verified_) verified_->insert(i);
    } else if (k + Dataset::kPrefetchDistance < indices.size) {
      dataset_->prefetch_index(indices[k + Dataset::kPrefetchDistance]);
    }
    records.push_back(dataset_->record_data(i));
  }
  const int64_t t1 = now_ns();

  scratch.field_dst.clear();
  for (const auto& block : buffer.fields) scratch.field_dst.push_back(block.get());
  layout_.write_batch(records.data(), records.size(), scratch.field_dst.data());
  buffer.size = static_cast<int64_t>(records.size());
  const int64_t t2 = now_ns();

  stats_->read_ns += t1 - t0;
  stats_->transform_ns += t2 - t1;
  stats_->batches += 1;
  stats_->samples += buffer.size;
  stats_->skipped += buffer.skipped;
}

}  // namespace stoker
