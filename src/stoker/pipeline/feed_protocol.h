#pragma once
// FeedProtocol: the order in which a device feed's copies, host buffers and device memory are
// let go, written once over DeviceApi (device_api.h) so that the simulation (testing/
// sim_device.h) checks the very code the CUDA feeds run (docs/DESIGN.md contract 11):
//   1. a host batch (its owner, whose release returns its pinned buffers to their pool, where a
//      worker rewrites them) is let go only after the event recorded behind its copies has
//      completed;
//   2. the consumer's stream waits on that event before the work queued after delivery;
//   3. device memory is freed only once the consumer's stream has passed the work queued when
//      the batch's last holder let it go;
//   4. a delivered batch's memory stays its holder's: nothing is copied into it until then.
//
//   FeedProtocol feed(device, /*max_in_flight=*/2);
//   FeedProtocol::Copy copy = feed.start({{{data, bytes}, ...}, owner});  // copies queued
//   DeviceBatch batch = feed.deliver(std::move(copy));  // for kernels on the consumer stream
//
// Thread-safety: start() and deliver() on one thread at a time (the consumer's); a DeviceBatch
// may be let go on any thread.

#include <cstddef>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "stoker/pipeline/device_api.h"

namespace stoker {

// A host batch to copy: one span per field, and the owner that keeps its buffers from their
// pool.
struct HostSpan {
  const void* data = nullptr;
  size_t bytes = 0;
};
struct FeedInput {
  std::vector<HostSpan> fields;
  std::shared_ptr<const void> owner;
};

// A batch on the device: one address per field, in the host batch's order. `memory` holds
// them; when its last holder lets go they are freed after the consumer's queued work.
struct DeviceBatch {
  std::vector<void*> fields;
  std::shared_ptr<const void> memory;
};

class FeedProtocol {
  // Device memory of one batch, freed after the stream of its last use (.cc).
  class Lease;

 public:
  // A wait the protocol leaves out. Only tests set it, to show that the simulation catches
  // each wait's absence.
  enum class Skip {
    kNone,
    kCopyBeforeHostRelease,  // rule 1: host batches let go as soon as their copies are queued
    kCopyBeforeConsume,      // rule 2: the consumer's stream does not wait for the copy
    kConsumeBeforeFree,      // rule 3: memory freed after the copy stream, not the consumer's
    kHolderBeforeFree,       // rule 4: memory held until the next delivery, not by the holder
  };

  // A batch whose copies are queued: its device memory and the event behind its copies.
  class Copy {
   private:
    friend class FeedProtocol;
    std::vector<void*> fields_;
    std::shared_ptr<Lease> lease_;
    DeviceEvent copied_;
  };

  // At most `max_in_flight` host batches are held for copies that may still read them; beyond
  // that start() waits for the oldest.
  FeedProtocol(std::shared_ptr<DeviceApi> device, size_t max_in_flight, Skip skip = Skip::kNone);
  // Waits for the copies still reading host batches, then lets those go.
  ~FeedProtocol();
  FeedProtocol(const FeedProtocol&) = delete;
  FeedProtocol& operator=(const FeedProtocol&) = delete;

  // Allocates the batch's device memory and queues its copies on the copy stream.
  Copy start(FeedInput host);
  // Makes the consumer's current stream wait for `copy`; the batch is usable by kernels queued
  // there from now on.
  DeviceBatch deliver(Copy copy);

 private:
  // Lets go of the host batches whose copies completed, and waits for the oldest while more
  // than `keep` are held.
  void release_copied(size_t keep);

  std::shared_ptr<DeviceApi> device_;
  const size_t max_in_flight_;
  const Skip skip_;
  // Host batches whose copies may still read them, oldest first, with the event behind them.
  std::deque<std::pair<DeviceEvent, std::shared_ptr<const void>>> in_flight_;
  // Skip::kHolderBeforeFree: the last delivered batch's memory, held here instead.
  std::shared_ptr<const void> last_delivered_;
};

}  // namespace stoker
