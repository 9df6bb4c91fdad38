#pragma once
// The registry of live file mappings: which file an address belongs to, for a fault handler.
// A file that shrinks while it is mapped (truncated, or rewritten in place) makes reads past its
// new end raise SIGBUS; the handler (the CLI's: the library installs none, docs/DESIGN.md
// contract 9) names the file through mapped_path_at. MappedFile registers each mapping after mmap
// and unregisters it before munmap, so a registered range is always mapped.
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

}  // namespace stoker
