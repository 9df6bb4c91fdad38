#pragma once
// SimDevice: a DeviceApi (pipeline/device_api.h) simulated on the CPU that checks the order of
// a feed's work. Each stream is a FIFO queue of operations (copy, record, wait, free, a
// consumer's read). In the threaded mode each queue is run by a thread of its own that sleeps a
// random delay from a seeded RNG before each operation, so copies and events complete after
// random delays; in the stepped mode no thread runs: a third of the caller's calls, drawn at
// random, run one operation of a random queue (seeded, so a run is deterministic), and
// synchronize() and drain() run them until done.
//
// The checker: a test writes host buffers through write_host() and queues consumer kernels
// through read(); the simulation counts a Violation when
//   kHostRewritten   a host range is written while a queued copy still reads it,
//   kReadBeforeCopy  a kernel reads memory before the copy into it ran,
//   kOverwritten     a kernel reads bytes other than those it expects (memory reused),
//   kFreedWhileRead  memory is freed while a kernel that reads it is queued, or a kernel is
//                    queued on freed memory.
// Freed memory is reused for the next allocation of its size, as device allocators do.
// Thread-safety: every function from any thread.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "stoker/pipeline/device_api.h"
#include "stoker/util/thread_annotations.h"

namespace stoker {

class SimDevice : public DeviceApi {
 public:
  enum class Mode { kThreads, kStepped };
  enum class Violation { kHostRewritten, kReadBeforeCopy, kOverwritten, kFreedWhileRead };

  // Threaded: delays up to `max_delay_us` before each operation.
  SimDevice(Mode mode, uint64_t seed, int max_delay_us = 50);
  // Runs what is queued, then joins the threads.
  ~SimDevice() override;
  SimDevice(const SimDevice&) = delete;
  SimDevice& operator=(const SimDevice&) = delete;

  HostAllocator host_allocator() override;
  DeviceStream consumer_stream() override;
  DeviceStream copy_stream() override;
  DeviceEvent record(DeviceStream stream) override STOKER_EXCLUDES(mutex_);
  bool query(const DeviceEvent& event) override STOKER_EXCLUDES(mutex_);
  void synchronize(const DeviceEvent& event) override STOKER_EXCLUDES(mutex_);
  void wait(DeviceStream stream, const DeviceEvent& event) override STOKER_EXCLUDES(mutex_);
  DeviceMemory allocate(size_t bytes, DeviceStream stream) override STOKER_EXCLUDES(mutex_);
  void free_after(DeviceMemory memory, DeviceStream stream) noexcept override
      STOKER_EXCLUDES(mutex_);
  void copy_to_device(const DeviceMemory& dst, const void* src, size_t bytes,
                      DeviceStream stream) override STOKER_EXCLUDES(mutex_);

  // The producer: fills `bytes` at host `dst` with `value`.
  void write_host(uint8_t* dst, size_t bytes, uint8_t value) STOKER_EXCLUDES(mutex_);
  // A consumer kernel on `stream` that reads `bytes` of device memory at `data` (an address
  // allocate() gave) and expects each to be `expected`.
  void read(DeviceStream stream, const void* data, size_t bytes, uint8_t expected)
      STOKER_EXCLUDES(mutex_);
  // Blocks until every queue is empty.
  void drain() STOKER_EXCLUDES(mutex_);
  size_t violations(Violation kind) const STOKER_EXCLUDES(mutex_);
  size_t violations() const STOKER_EXCLUDES(mutex_);

 private:
  struct Event {
    bool complete = false;
  };
  struct Block {
    std::vector<uint8_t> bytes;
    bool allocated = true;
    bool copied = false;   // a copy into it ran since it was allocated
    int queued_reads = 0;  // kernels queued that read it
  };
  struct Op {
    enum Kind { kCopy, kRecord, kWait, kRead, kFree };
    explicit Op(Kind k) : kind(k) {}
    Kind kind;
    Block* block = nullptr;
    const uint8_t* src = nullptr;  // kCopy
    size_t bytes = 0;
    uint8_t expected = 0;  // kRead
    std::shared_ptr<Event> event;
  };
  struct Queue {
    std::deque<Op> ops;
  };

  Queue& queue(DeviceStream stream);
  void enqueue(DeviceStream stream, Op op) STOKER_REQUIRES(mutex_);
  bool runnable(const Queue& queue) const STOKER_REQUIRES(mutex_);
  // Runs and pops `queue`'s first operation.
  void run_front(Queue& queue) STOKER_REQUIRES(mutex_);
  // Stepped mode: runs up to `steps` operations of random runnable queues; false if none was.
  bool step(int steps) STOKER_REQUIRES(mutex_);
  // Stepped mode: the operation a third of the calls run.
  void advance() STOKER_REQUIRES(mutex_);
  // Threaded mode: the thread of queues_[index].
  void run_queue(size_t index) STOKER_EXCLUDES(mutex_);
  void violate(Violation kind) STOKER_REQUIRES(mutex_);

  const Mode mode_;
  const int max_delay_us_;
  mutable Mutex mutex_;
  std::condition_variable changed_;
  std::mt19937_64 rng_ STOKER_GUARDED_BY(mutex_);
  Queue queues_[2] STOKER_GUARDED_BY(mutex_);  // copy, consumer
  std::vector<std::unique_ptr<Block>> blocks_ STOKER_GUARDED_BY(mutex_);
  std::map<const void*, Block*> by_address_ STOKER_GUARDED_BY(mutex_);
  std::multimap<size_t, Block*> freed_ STOKER_GUARDED_BY(mutex_);  // by size, for reuse
  std::map<Violation, size_t> violations_ STOKER_GUARDED_BY(mutex_);
  bool stopping_ STOKER_GUARDED_BY(mutex_) = false;
  std::thread threads_[2];  // threaded mode: one per queue
};

}  // namespace stoker
