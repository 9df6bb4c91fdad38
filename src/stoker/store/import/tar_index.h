#pragma once
// A tar's index: its members (tar_members.h) and the XXH3-64 of each member's bytes, with the
// identity of the tar it was built from (path, size, modification time). Built by reading the
// tar once; kept under CACHE_DIR/tar-indexes/ (one file per tar, named by the XXH3-64 of its
// absolute path) so that later opens read it instead of the tar, while the tar's size and time
// are the same. Nothing is written next to the tar. A reader that seeks to a member checks the
// member's bytes against the checksum here: a tar changed since (same size and time) is caught
// there. Functions; thread-safe (the saved file is replaced atomically).

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/store/import/tar_members.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker {

// What a tar was when its index was built.
struct TarIdentity {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const TarIdentity& o) const { return size == o.size && mtime_ns == o.mtime_ns; }
};

struct TarIndex {
  std::string path;
  TarIdentity identity;
  TarListing listing;
  std::vector<uint64_t> checksums;  // of each listed member's bytes
};

// The identity of the regular file open as `fd`.
Result<TarIdentity> tar_identity(int fd, const std::string& path);

// The index of the tar at `path`, read whole: one line naming it when it cannot be read (not
// found, not a regular file, an I/O error). Its damage is in the listing, not an error.
Result<TarIndex> build_tar_index(const std::string& path);

// The index of `path` from `cache_dir`'s copy when it is of the tar as it is now, else built
// and saved there ("" : built every time). A cache that cannot be written is passed over.
Result<TarIndex> cached_tar_index(const std::string& path, const std::string& cache_dir);

// The bytes of member `member` of the tar `index` is of, read from `fd` (that tar, open):
// kCorrupt when they are not the bytes indexed (the tar changed since), kIoError when they
// cannot be read; the error names the member, not the tar.
Result<std::string> read_member(int fd, const TarIndex& index, size_t member);

// The saved form of `index`, and back: decode_tar_index is kCorrupt for bytes that are not a
// whole index of `path` (a parser of the cache's bytes: fuzz/tar_fuzz.cc).
std::string encode_tar_index(const TarIndex& index);
Result<TarIndex> decode_tar_index(ByteSpan bytes, const std::string& path);

}  // namespace stoker
