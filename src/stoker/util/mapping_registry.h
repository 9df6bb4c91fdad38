#pragma once
// The registry of live file mappings: which file an address belongs to, for a fault handler.
// A file that shrinks while it is mapped (truncated, or rewritten in place) makes reads past its
// new end raise SIGBUS; the handler (mapped_read_guard.h's, installed by the CLI and the Python
// package: the library installs none by itself, docs/DESIGN.md contract 9) finds the file
// through mark_changed_at and marks it changed, so that readers can say which file changed.
// MappedFile registers each mapping after mmap and unregisters it before munmap, so a
// registered range is always mapped.
//
// A fixed table of kMappingRegistrySlots slots, each guarded by a sequence number: lock-free,
// no allocation on lookup. Thread-safety: every function may run concurrently on any thread;
// mapped_path_at is also async-signal-safe.

#include <cstddef>
#include <string>

namespace stoker {

// Mappings beyond this many at once are not registered: they work, but a fault in one is not
// named (the handler then leaves SIGBUS its default action).
constexpr size_t kMappingRegistrySlots = 4096;

// Records [base, base + size) as a mapping of `path` (copied). False if the table is full.
bool register_mapping(const void* base, size_t size, const std::string& path);

// Forgets the mapping registered at `base`; call before unmapping it. No-op if none is.
void unregister_mapping(const void* base);

// The path of the registered mapping that contains `addr`, or nullptr. Async-signal-safe. The
// string lives as long as that mapping stays registered (a read faulting inside it keeps it so).
const char* mapped_path_at(const void* addr);

// The registered mapping that contains `addr`: its path (as mapped_path_at), start and size; or
// nullptr. Also marks it changed (mapping_changed_at). Async-signal-safe.
const char* mark_changed_at(const void* addr, const void** base, size_t* size);

// Whether the registered mapping that contains `addr` was marked changed.
bool mapping_changed_at(const void* addr);

// How many registered mappings are marked changed now: 0 (always, unless a file shrank under a
// guarded read) lets readers skip mapping_changed_at.
size_t changed_mappings();

}  // namespace stoker
