#include "stoker/pipeline/feed_protocol.h"

namespace stoker {

// Frees its memory after `after`: the copy stream while the batch is only copied, the
// consumer's once delivered.
class FeedProtocol::Lease {
 public:
  Lease(std::shared_ptr<DeviceApi> device, DeviceStream after)
      : device_(std::move(device)), after_(after) {}
  ~Lease() {
    for (DeviceMemory& m : memory_) device_->free_after(std::move(m), after_);
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  const DeviceMemory& add(DeviceMemory memory) {
    memory_.push_back(std::move(memory));
    return memory_.back();
  }
  void free_after(DeviceStream stream) { after_ = stream; }

 private:
  std::shared_ptr<DeviceApi> device_;
  DeviceStream after_;
  std::vector<DeviceMemory> memory_;
};

FeedProtocol::FeedProtocol(std::shared_ptr<DeviceApi> device, size_t max_in_flight, Skip skip)
    : device_(std::move(device)), max_in_flight_(max_in_flight), skip_(skip) {}

FeedProtocol::~FeedProtocol() { release_copied(0); }

FeedProtocol::Copy FeedProtocol::start(FeedInput host) {
  const DeviceStream stream = device_->copy_stream();
  Copy copy;
  copy.lease_ = std::make_shared<Lease>(device_, stream);
  for (const HostSpan& field : host.fields) {
    const DeviceMemory& memory = copy.lease_->add(device_->allocate(field.bytes, stream));
    device_->copy_to_device(memory, field.data, field.bytes, stream);
    copy.fields_.push_back(memory.data);
  }
  copy.copied_ = device_->record(stream);
  if (skip_ != Skip::kCopyBeforeHostRelease) in_flight_.emplace_back(copy.copied_, host.owner);
  release_copied(max_in_flight_);
  return copy;
}

DeviceBatch FeedProtocol::deliver(Copy copy) {
  const DeviceStream consumer = device_->consumer_stream();
  if (skip_ != Skip::kCopyBeforeConsume) device_->wait(consumer, copy.copied_);
  if (skip_ != Skip::kConsumeBeforeFree) copy.lease_->free_after(consumer);
  DeviceBatch batch{std::move(copy.fields_), std::move(copy.lease_)};
  if (skip_ == Skip::kHolderBeforeFree) last_delivered_ = std::move(batch.memory);
  return batch;
}

void FeedProtocol::release_copied(size_t keep) {
  while (!in_flight_.empty() &&
         (in_flight_.size() > keep || device_->query(in_flight_.front().first))) {
    device_->synchronize(in_flight_.front().first);
    in_flight_.pop_front();
  }
}

}  // namespace stoker
