#include "stoker/testing/sim_device.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>
#include <stdexcept>

namespace stoker {
namespace {

bool overlap(const uint8_t* a, size_t a_bytes, const uint8_t* b, size_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}

}  // namespace

SimDevice::SimDevice(Mode mode, uint64_t seed, int max_delay_us)
    : mode_(mode), max_delay_us_(max_delay_us), rng_(seed) {
  if (mode_ != Mode::kThreads) return;
  for (size_t i = 0; i < std::size(threads_); ++i)
    threads_[i] = std::thread([this, i] { run_queue(i); });
}

SimDevice::~SimDevice() {
  drain();
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

HostAllocator SimDevice::host_allocator() { return default_host_allocator(); }

DeviceStream SimDevice::consumer_stream() { return {&queues_[1]}; }

DeviceStream SimDevice::copy_stream() { return {&queues_[0]}; }

SimDevice::Queue& SimDevice::queue(DeviceStream stream) { return *static_cast<Queue*>(stream.id); }

DeviceEvent SimDevice::record(DeviceStream stream) {
  MutexLock lock(mutex_);
  auto event = std::make_shared<Event>();
  Op op(Op::kRecord);
  op.event = event;
  enqueue(stream, std::move(op));
  return {event};
}

bool SimDevice::query(const DeviceEvent& event) {
  MutexLock lock(mutex_);
  advance();
  return static_cast<const Event*>(event.id.get())->complete;
}

void SimDevice::synchronize(const DeviceEvent& event) {
  const auto* e = static_cast<const Event*>(event.id.get());
  MutexLock lock(mutex_);
  if (mode_ == Mode::kThreads) {
    lock.wait(changed_, [&]() STOKER_REQUIRES(mutex_) { return e->complete; });
    return;
  }
  while (!e->complete) {
    if (!step(1))
      throw std::logic_error("SimDevice: synchronize() on an event that never completes");
  }
}

void SimDevice::wait(DeviceStream stream, const DeviceEvent& event) {
  MutexLock lock(mutex_);
  Op op(Op::kWait);
  op.event = std::static_pointer_cast<Event>(event.id);
  enqueue(stream, std::move(op));
}

DeviceMemory SimDevice::allocate(size_t bytes, DeviceStream) {
  MutexLock lock(mutex_);
  advance();
  Block* block;
  auto reuse = freed_.find(bytes);
  if (reuse != freed_.end()) {
    block = reuse->second;
    freed_.erase(reuse);
    block->allocated = true;
    block->copied = false;
  } else {
    blocks_.push_back(std::make_unique<Block>());
    block = blocks_.back().get();
    block->bytes.resize(bytes);
    by_address_[block->bytes.data()] = block;
  }
  return {block->bytes.data(), bytes, nullptr};
}

void SimDevice::free_after(DeviceMemory memory, DeviceStream stream) noexcept {
  MutexLock lock(mutex_);
  Op op(Op::kFree);
  op.block = by_address_.at(memory.data);
  enqueue(stream, std::move(op));
}

void SimDevice::copy_to_device(const DeviceMemory& dst, const void* src, size_t bytes,
                               DeviceStream stream) {
  MutexLock lock(mutex_);
  Op op(Op::kCopy);
  op.block = by_address_.at(dst.data);
  op.src = static_cast<const uint8_t*>(src);
  op.bytes = bytes;
  enqueue(stream, std::move(op));
}

void SimDevice::write_host(uint8_t* dst, size_t bytes, uint8_t value) {
  MutexLock lock(mutex_);
  advance();
  for (const Queue& q : queues_) {
    for (const Op& op : q.ops) {
      if (op.kind == Op::kCopy && overlap(op.src, op.bytes, dst, bytes)) {
        violate(Violation::kHostRewritten);
      }
    }
  }
  std::memset(dst, value, bytes);
}

void SimDevice::read(DeviceStream stream, const void* data, size_t bytes, uint8_t expected) {
  MutexLock lock(mutex_);
  Block* block = by_address_.at(data);
  if (!block->allocated) {
    violate(Violation::kFreedWhileRead);
    return;
  }
  ++block->queued_reads;
  Op op(Op::kRead);
  op.block = block;
  op.bytes = bytes;
  op.expected = expected;
  enqueue(stream, std::move(op));
}

void SimDevice::drain() {
  MutexLock lock(mutex_);
  const auto empty = [&]() STOKER_REQUIRES(mutex_) {
    return std::all_of(std::begin(queues_), std::end(queues_),
                       [](const Queue& q) { return q.ops.empty(); });
  };
  if (mode_ == Mode::kThreads) {
    lock.wait(changed_, empty);
    return;
  }
  while (!empty()) {
    if (!step(1))
      throw std::logic_error("SimDevice: queued work waits for an event never recorded");
  }
}

size_t SimDevice::violations(Violation kind) const {
  MutexLock lock(mutex_);
  auto it = violations_.find(kind);
  return it == violations_.end() ? 0 : it->second;
}

size_t SimDevice::violations() const {
  MutexLock lock(mutex_);
  size_t n = 0;
  for (const auto& [kind, count] : violations_) n += count;
  return n;
}

void SimDevice::enqueue(DeviceStream stream, Op op) {
  queue(stream).ops.push_back(std::move(op));
  changed_.notify_all();
  advance();
}

bool SimDevice::runnable(const Queue& q) const {
  return !q.ops.empty() && (q.ops.front().kind != Op::kWait || q.ops.front().event->complete);
}

void SimDevice::run_front(Queue& q) {
  Op& op = q.ops.front();
  Block* block = op.block;
  switch (op.kind) {
    case Op::kCopy:
      std::memcpy(block->bytes.data(), op.src, op.bytes);
      block->copied = true;
      break;
    case Op::kRecord:
      op.event->complete = true;
      break;
    case Op::kWait:
      break;
    case Op::kRead:
      --block->queued_reads;
      if (!block->allocated) {
        violate(Violation::kFreedWhileRead);
      } else if (!block->copied) {
        violate(Violation::kReadBeforeCopy);
      } else if (std::any_of(block->bytes.begin(), block->bytes.begin() + op.bytes,
                             [&](uint8_t b) { return b != op.expected; })) {
        violate(Violation::kOverwritten);
      }
      break;
    case Op::kFree:
      if (block->queued_reads > 0) violate(Violation::kFreedWhileRead);
      block->allocated = false;
      freed_.emplace(block->bytes.size(), block);
      break;
  }
  q.ops.pop_front();
  changed_.notify_all();
}

bool SimDevice::step(int steps) {
  for (int i = 0; i < steps; ++i) {
    std::vector<Queue*> ready;
    for (Queue& q : queues_) {
      if (runnable(q)) ready.push_back(&q);
    }
    if (ready.empty()) return i > 0;
    run_front(*ready[rng_() % ready.size()]);
  }
  return true;
}

void SimDevice::advance() {
  if (mode_ == Mode::kStepped && rng_() % 3 == 0) step(1);
}

void SimDevice::run_queue(size_t index) {
  pthread_setname_np(pthread_self(), "stoker-sim");
  MutexLock lock(mutex_);
  Queue& q = queues_[index];
  for (;;) {
    lock.wait(changed_, [&]() STOKER_REQUIRES(mutex_) { return stopping_ || runnable(q); });
    if (!runnable(q)) return;
    const auto delay = std::chrono::microseconds(rng_() % (max_delay_us_ + 1));
    lock.unlock();
    std::this_thread::sleep_for(delay);
    lock.lock();
    run_front(q);
  }
}

void SimDevice::violate(Violation kind) { ++violations_[kind]; }

}  // namespace stoker
