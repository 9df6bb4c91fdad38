#pragma once
// ordered_map: work on a pool of threads, results consumed in order. produce(i, worker) runs for
// every i in [0, count) on `workers` threads; consume(i, result) runs on the calling thread for
// i = 0, 1, 2, ... in that order, whatever the thread count or timing — so what the caller does
// with the results (write a dataset, say) is the same for any `workers`. Besides the result
// being consumed, at most `window` results exist at once (produced or being produced), which
// bounds memory.
//
// consume returning a non-ok Status stops the run: nothing more is started, the threads finish
// what they are doing and are joined, and that Status is returned. A produce that throws is
// caught on its thread and ends the run the same way, with kInternal naming the item, when its
// turn to be consumed comes. Thread-safety: produce is called concurrently (with distinct
// `worker` numbers in [0, workers) — per-worker scratch needs no lock); consume only on the
// calling thread.

#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "stoker/util/status.h"
#include "stoker/util/thread_annotations.h"

namespace stoker {

template <typename T, typename Produce, typename Consume>
Status ordered_map(size_t count, int workers, size_t window, Produce&& produce, Consume&& consume) {
  if (workers < 1 || window < 1)
    return invalid_argument("ordered_map: workers and window must be at least 1");
  struct Slot {
    std::optional<T> value;
    Status error;  // produce threw
    bool ready = false;
  };
  struct Shared {
    explicit Shared(size_t window) : slots(window) {}
    Mutex mutex;
    std::condition_variable item_ready, slot_free;
    std::vector<Slot> slots STOKER_GUARDED_BY(mutex);
    size_t next STOKER_GUARDED_BY(mutex) = 0;      // the next index to produce
    size_t consumed STOKER_GUARDED_BY(mutex) = 0;  // indices below this are taken by the consumer
    bool stop STOKER_GUARDED_BY(mutex) = false;
  } shared(window);

  const auto run_worker = [&](int worker) {
    pthread_setname_np(pthread_self(), "stoker-map");
    for (;;) {
      size_t index;
      {
        MutexLock lock(shared.mutex);
        lock.wait(shared.slot_free, [&]() STOKER_REQUIRES(shared.mutex) {
          return shared.stop || shared.next >= count || shared.next < shared.consumed + window;
        });
        if (shared.stop || shared.next >= count) return;
        index = shared.next++;
      }
      Slot result;
      try {
        result.value.emplace(produce(index, worker));
      } catch (const std::exception& e) {
        result.error =
            Status(StatusCode::kInternal, "item " + std::to_string(index) + ": " + e.what());
      } catch (...) {
        result.error =
            Status(StatusCode::kInternal, "item " + std::to_string(index) + ": unknown exception");
      }
      result.ready = true;
      MutexLock lock(shared.mutex);
      shared.slots[index % window] = std::move(result);
      shared.item_ready.notify_all();
    }
  };

  std::vector<std::thread> threads;
  const size_t thread_count = std::min<size_t>(static_cast<size_t>(workers), count);
  Status status;
  try {
    for (size_t w = 0; w < thread_count; ++w) threads.emplace_back(run_worker, static_cast<int>(w));
  } catch (const std::exception& e) {
    status = Status(StatusCode::kIoError, std::string("cannot start a thread: ") + e.what());
  }
  for (size_t index = 0; index < count && status.is_ok(); ++index) {
    Slot slot;
    {
      MutexLock lock(shared.mutex);
      lock.wait(shared.item_ready,
                [&]() STOKER_REQUIRES(shared.mutex) { return shared.slots[index % window].ready; });
      slot = std::move(shared.slots[index % window]);
      shared.slots[index % window] = Slot();
      shared.consumed = index + 1;
      shared.slot_free.notify_all();
    }
    status = slot.error.is_ok() ? Status(consume(index, *slot.value)) : slot.error;
  }
  {
    MutexLock lock(shared.mutex);
    shared.stop = true;
    shared.slot_free.notify_all();
  }
  for (std::thread& thread : threads) thread.join();
  return status;
}

}  // namespace stoker
