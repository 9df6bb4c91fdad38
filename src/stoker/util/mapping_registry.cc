#include "stoker/util/mapping_registry.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>

namespace stoker {
namespace {

// A slot's sequence number only grows; its value modulo 4 is the slot's state. A reader that
// sees the same live number before and after reading the fields has read one registration.
enum SlotState : uint64_t { kFree = 0, kFilling = 1, kLive = 2, kClearing = 3 };

struct Slot {
  std::atomic<uint64_t> seq{0};
  std::atomic<uintptr_t> base{0};
  std::atomic<size_t> size{0};
  std::atomic<const char*> path{nullptr};
  std::atomic<bool> changed{false};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
                  std::atomic<uintptr_t>::is_always_lock_free &&
                  std::atomic<const char*>::is_always_lock_free &&
                  std::atomic<size_t>::is_always_lock_free &&
                  std::atomic<bool>::is_always_lock_free,
              "mapped_path_at and mark_changed_at must be async-signal-safe");

std::array<Slot, kMappingRegistrySlots> slots;
std::atomic<size_t> changed_count{0};

SlotState state_of(uint64_t seq) { return static_cast<SlotState>(seq % 4); }

}  // namespace

bool register_mapping(const void* base, size_t size, const std::string& path) {
  for (Slot& slot : slots) {
    uint64_t seq = slot.seq.load();
    if (state_of(seq) != kFree || !slot.seq.compare_exchange_strong(seq, seq + 1)) continue;
    char* copy = new char[path.size() + 1];
    std::memcpy(copy, path.c_str(), path.size() + 1);
    slot.base.store(reinterpret_cast<uintptr_t>(base));
    slot.size.store(size);
    slot.path.store(copy);
    slot.seq.store(seq + 2);
    return true;
  }
  return false;
}

void unregister_mapping(const void* base) {
  const auto wanted = reinterpret_cast<uintptr_t>(base);
  for (Slot& slot : slots) {
    uint64_t seq = slot.seq.load();
    if (state_of(seq) != kLive || slot.base.load() != wanted ||
        !slot.seq.compare_exchange_strong(seq, seq + 1))
      continue;
    const char* path = slot.path.exchange(nullptr);
    if (slot.changed.exchange(false)) changed_count.fetch_sub(1);
    slot.base.store(0);
    slot.size.store(0);
    slot.seq.store(seq + 2);
    delete[] path;
    return;
  }
}

namespace {

// The live slot whose range holds `addr`, or nullptr. Async-signal-safe.
Slot* slot_at(const void* addr) {
  const auto at = reinterpret_cast<uintptr_t>(addr);
  for (Slot& slot : slots) {
    const uint64_t seq = slot.seq.load();
    if (state_of(seq) != kLive) continue;
    const uintptr_t base = slot.base.load();
    const size_t size = slot.size.load();
    if (slot.seq.load() == seq && at >= base && at - base < size) return &slot;
  }
  return nullptr;
}

}  // namespace

const char* mapped_path_at(const void* addr) {
  const Slot* slot = slot_at(addr);
  return slot != nullptr ? slot->path.load() : nullptr;
}

const char* mark_changed_at(const void* addr, const void** base, size_t* size) {
  Slot* slot = slot_at(addr);
  if (slot == nullptr) return nullptr;
  if (!slot->changed.exchange(true)) changed_count.fetch_add(1);
  *base = reinterpret_cast<const void*>(slot->base.load());
  *size = slot->size.load();
  return slot->path.load();
}

bool mapping_changed_at(const void* addr) {
  const Slot* slot = slot_at(addr);
  return slot != nullptr && slot->changed.load();
}

size_t changed_mappings() { return changed_count.load(std::memory_order_relaxed); }

}  // namespace stoker
