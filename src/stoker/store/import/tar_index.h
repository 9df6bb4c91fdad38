#pragma once
// A tar's index: its members (tar_members.h), the XXH3-64 of each member's bytes and the header
// of each `.npy` member (npy_header.h), with the identity of the tar it was built from (size, and a
// local file's modification time or a remote object's ETag). Built by reading the tar once; kept
// under CACHE_DIR/tar-indexes/ (one file per tar, named by the XXH3-64 of its absolute path or of
// its URL) so that later opens read it instead of the tar, while the tar's identity is the same.
// Nothing is written next to the tar. A reader that seeks to a member checks the member's bytes
// against the checksum here: a tar changed since (same size and time) is caught there. Functions;
// thread-safe (the saved file is replaced atomically).

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/store/import/tar_members.h"
#include "stoker/store/in_place_files.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker {

struct TarIndex {
  std::string path;
  FileIdentity identity;  // of the tar it was built from
  TarListing listing;
  std::vector<uint64_t> checksums;  // of each listed member's bytes
  // Of each listed member named *.npy (any case), its first npy_header_size bytes; else "".
  std::vector<std::string> npy_heads;
};

// Whether a member called `name` is a .npy file (its name ends in .npy, any case).
bool is_npy_name(const std::string& name);

// The index of the tar at `path`, read whole: one line naming it when it cannot be read (not
// found, not a regular file, an I/O error). Its damage is in the listing, not an error.
Result<TarIndex> build_tar_index(const std::string& path);

// The index of the tar `name` (its path or URL, for messages) read from `fd` (that tar, open,
// of `identity`).
Result<TarIndex> build_tar_index(const std::string& name, int fd, const FileIdentity& identity);

// The index of tar `tar` of `files`: the copy kept in `cache_dir` (tar-indexes/KEY.index) when
// it is of the tar as it is now, else built (the tar opened) and kept there ("": built every
// time). A cache that cannot be written is passed over.
Result<TarIndex> tar_index_of(const InPlaceFiles& files, size_t tar, const std::string& cache_dir);

// The bytes of member `member` of the tar `index` is of, read from `fd` (that tar, open):
// kCorrupt when they are not the bytes indexed (the tar changed since), kIoError when they
// cannot be read; the error names the member, not the tar.
Result<std::string> read_member(int fd, const TarIndex& index, size_t member);

// The saved form of `index`, and back: decode_tar_index is kCorrupt for bytes that are not a
// whole index of `path` (a parser of the cache's bytes: fuzz/tar_fuzz.cc).
std::string encode_tar_index(const TarIndex& index);
Result<TarIndex> decode_tar_index(ByteSpan bytes, const std::string& path);

}  // namespace stoker
