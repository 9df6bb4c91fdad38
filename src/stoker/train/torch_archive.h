#pragma once
// Serialised LibTorch values on disk: torch::save written crash-safely through an AtomicFile,
// torch::load with c10 errors turned into a Status. Shared by models and checkpoints.

#include <torch/serialize.h>

#include <sstream>
#include <string>

#include "stoker/util/atomic_file.h"
#include "stoker/util/status.h"

namespace stoker {

// The first line of a c10::Error, without the C++ backtrace.
inline std::string short_message(const c10::Error& e) {
  std::string message = e.what_without_backtrace();
  return message.substr(0, message.find('\n'));
}

// torch::save(value) into `path`; kIoError naming `what` if it cannot be serialised or written.
template <typename T>
Status save_archive(const T& value, const std::string& path, const std::string& what) {
  std::ostringstream bytes;
  try {
    torch::save(value, bytes);
  } catch (const c10::Error& e) {
    return io_error("cannot serialize " + what + " to " + path + ": " + short_message(e));
  }
  return write_file_atomically(path, bytes.str());
}

// torch::load(value) from `path`; kCorrupt naming `what` and the file if it fails.
template <typename T>
Status load_archive(T& value, const std::string& path, const std::string& what) {
  try {
    torch::load(value, path);
  } catch (const c10::Error& e) {
    return corrupt("cannot load " + what + " from " + path + ": " + short_message(e));
  }
  return Status::ok();
}

}  // namespace stoker
