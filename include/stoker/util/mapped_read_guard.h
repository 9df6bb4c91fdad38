#pragma once
// Reads of a mapped file that shrank while it was mapped (a shard truncated, or rewritten in
// place, during a run): an error of the reader instead of a SIGBUS that ends the process.
//
// A read past a mapped file's new end raises SIGBUS. With the handler installed
// (install_mapped_read_fault_handler) and a MappedReadGuard alive on the reading thread, such a
// fault in a MappedFile (every shard is one) replaces the mapping from the faulting page to its
// end by zero pages and returns: the read goes on, reading zeros, and the file is marked
// changed. The reader then turns that into an error naming the file: the guard's
// changed_file(), or, for a file another thread found changed, mapped_file_changed(). Nothing
// is jumped over (no lock held, no destructor skipped): the faulting instruction simply
// completes, so any code may run inside a guard, a JPEG decoder or a caller's transform too;
// what it computes from the zeros is discarded by the reader. The loader (its workers, or the
// consumer with workers == 0) reads records inside a guard and fails a record of a changed
// file with an error naming shard and record (docs/FORMAT.md, "Shards changed during a run").
//
// Any other SIGBUS — at an address outside stoker's mappings, on a thread without a guard, or
// sent by kill — goes to the handler that was installed before (called as SIGBUS handlers are),
// or, if that was the default action or SIG_IGN, takes the default action: the process ends.
// Bytes between the new end and the end of its page read as zeros without any fault; record
// checksums find them where the verify policy checks.
//
// The handler changes process-wide state, so the library never installs it by itself
// (docs/DESIGN.md contract 9): the `stoker` command and the Python package do, at start and at
// import; a C++ program opts in by calling install_mapped_read_fault_handler once. Thread-safety:
// every function may be called from any thread.

#include <string>

namespace stoker {

// Installs the SIGBUS handler described above, chained to the one installed before. Idempotent
// while it is the process's handler; if another has replaced it since (faulthandler.enable()
// after `import stoker`, for one), installs it again on top, chained to that one: call it
// where reading starts (the Python package does for each Loader, epoch, inspect and verify).
// Once a SIGBUS was passed on, later ones not recovered take the default action, so a handler
// that hands the signal back (faulthandler restores the handler it replaced and raises again)
// ends the process instead of starting a loop. Throws Error (kIoError) if sigaction fails.
void install_mapped_read_fault_handler();

// Marks the current thread as reading mapped files, for its lifetime (RAII; guards may nest).
// At most kMaxGuardedThreads threads hold guards at once; a guard beyond them protects nothing
// (its thread's faults go on to the previous handler). Not copyable; use it on the thread that
// made it.
class MappedReadGuard {
 public:
  static constexpr int kMaxGuardedThreads = 1024;

  MappedReadGuard();
  MappedReadGuard(const MappedReadGuard&) = delete;
  MappedReadGuard& operator=(const MappedReadGuard&) = delete;
  ~MappedReadGuard();

  // The path of the mapped file this thread found changed (shrunk) while guarded, or "" if
  // none. Call while that file is still mapped (while the reader still holds what mapped it).
  std::string changed_file() const;

 private:
  int slot_;  // in the table of guarded threads; -1: none was free
};

// Whether any mapped file still mapped was found changed: one atomic load; false lets a reader
// skip mapped_file_changed.
bool any_mapped_file_changed();

// Whether the mapped file (a MappedFile's mapping) holding `addr` was found changed by any
// thread.
bool mapped_file_changed(const void* addr);

// What a reader says of a file found changed ("PATH: " before it): the `stoker` command's words.
inline constexpr char kChangedSizeText[] =
    "the file changed size while it was being read (truncated or overwritten in place)";

}  // namespace stoker
