#pragma once
// MappedFile: a read-only memory map of a whole file (RAII). Move-only.
// Thread-safe for concurrent reads once opened.

#include <cstddef>
#include <cstdint>
#include <string>

#include "stoker/util/status.h"

namespace stoker {

class MappedFile {
 public:
  // Maps `path` read-only. An empty file maps to size 0 with data() == nullptr. Only a regular
  // file is mapped: a FIFO, a device or a directory (or a symlink to one) is kInvalidArgument
  // naming the path, found without blocking on it (see RegularFile).
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void reset();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace stoker
