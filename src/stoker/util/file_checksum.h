#pragma once
// The checksum of a whole file (util/checksum.h's XXH3-64, seed 0), read in pieces so that a
// file of any size takes little memory: what binds a file to the description that records it
// (a checkpoint's model.pt to its meta.json). Stateless; thread-safe.

#include <cstdint>
#include <string>

#include "stoker/util/status.h"

namespace stoker {

// XXH3-64 of the bytes of the regular file at `path`: the same as xxh3_64() of its contents.
// kNotFound if there is no such file, kInvalidArgument if it is not a regular file, kIoError if
// it cannot be read; the error names the path.
Result<uint64_t> file_checksum(const std::string& path);

}  // namespace stoker
