#include "stoker/pipeline/batch_buffer.h"

#include <cstdlib>
#include <new>

namespace stoker {

HostAllocator default_host_allocator() {
  return [](size_t bytes) {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == nullptr) throw std::bad_alloc();
    return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
  };
}

std::shared_ptr<BufferPool> BufferPool::create(const BatchLayout& layout, int64_t capacity,
                                               size_t max_idle, HostAllocator allocator) {
  std::vector<size_t> field_bytes;
  std::vector<size_t> ranks;
  for (const BatchField& f : layout.fields()) {
    field_bytes.push_back(f.slot_bytes * static_cast<size_t>(capacity));
    ranks.push_back(f.variable ? f.sample_shape.size() : 0);
  }
  return std::shared_ptr<BufferPool>(new BufferPool(std::move(field_bytes), std::move(ranks),
                                                    capacity, max_idle, std::move(allocator)));
}

BufferPool::BufferPool(std::vector<size_t> field_bytes, std::vector<size_t> ranks, int64_t capacity,
                       size_t max_idle, HostAllocator allocator)
    : field_bytes_(std::move(field_bytes)),
      ranks_(std::move(ranks)),
      capacity_(capacity),
      max_idle_(max_idle),
      allocator_(std::move(allocator)) {
  idle_.reserve(max_idle_);  // give_back runs in deleters: it must not allocate
}

std::shared_ptr<BatchBuffer> BufferPool::acquire() {
  if (std::shared_ptr<BatchBuffer> idle = acquire_idle()) return idle;
  {
    MutexLock lock(mutex_);
    ++allocations_;
  }
  auto buffer = std::make_unique<BatchBuffer>();
  buffer->capacity = capacity_;
  for (size_t bytes : field_bytes_) buffer->fields.push_back(allocator_(bytes));
  for (size_t rank : ranks_) {
    buffer->shapes.emplace_back(rank * static_cast<size_t>(capacity_));
    buffer->largest.emplace_back(rank);
  }
  return hand_out(std::move(buffer));
}

std::shared_ptr<BatchBuffer> BufferPool::acquire_idle() {
  std::unique_ptr<BatchBuffer> buffer;
  {
    MutexLock lock(mutex_);
    if (idle_.empty()) return nullptr;
    buffer = std::move(idle_.back());
    idle_.pop_back();
  }
  return hand_out(std::move(buffer));
}

std::shared_ptr<BatchBuffer> BufferPool::hand_out(std::unique_ptr<BatchBuffer> buffer) {
  buffer->size = 0;
  buffer->skipped = 0;
  buffer->padding = 0;
  buffer->status = Status::ok();
  std::weak_ptr<BufferPool> pool = weak_from_this();
  return std::shared_ptr<BatchBuffer>(buffer.release(), [pool](BatchBuffer* b) {
    if (auto p = pool.lock()) {
      p->give_back(b);
    } else {
      delete b;
    }
  });
}

void BufferPool::give_back(BatchBuffer* buffer) {
  std::unique_ptr<BatchBuffer> owned(buffer);
  MutexLock lock(mutex_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(owned));
}

size_t BufferPool::allocations() const {
  MutexLock lock(mutex_);
  return allocations_;
}

}  // namespace stoker
