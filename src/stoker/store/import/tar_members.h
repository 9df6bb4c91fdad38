#pragma once
// The members of a tar file, read from its headers: each member's name, where its data starts
// and its size, so that a reader seeks to a member without reading the others (webdataset_index.h).
// Formats: ustar (with its name prefix), GNU (long names `L`, base-256 sizes) and pax (`x`
// headers' `path` and `size`; global `g` headers passed over), as Python's tarfile writes them.
//
// Hand-written rather than libarchive: the index needs each member's data offset, which
// libarchive does not give (archive_read_header_position gives a header's; its reads run ahead
// in blocks), and the parser is the few fixed fields below, fuzzed (fuzz/tar_fuzz.cc).
//
// Damage stops the listing where it is found and is said in one line naming the member (a bad
// header checksum, a member whose data runs past the end, a malformed size or pax record, a file
// that is not a tar); the members before it stand. Functions; thread-safe.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker {

struct TarMember {
  std::string name;
  uint64_t offset = 0;  // of its data in the tar
  uint64_t size = 0;
  // "" for a regular file; else what it is ("a symbolic link to x.jpg"): it has no data here.
  std::string unsupported;
};

struct TarListing {
  std::vector<TarMember> members;  // in tar order; directories left out
  // "" for a whole tar; else why the listing stopped early, one line naming the member.
  std::string damage;
  std::string cut_member;  // the member whose data the damage cut short, if it is that
};

// Reads up to `n` bytes at `offset` into `out`, giving how many (fewer only at the end).
using TarReadAt = std::function<Result<size_t>(uint64_t offset, uint8_t* out, size_t n)>;

// The listing of a tar of `size` bytes read through `read`; only `read`'s errors fail it.
Result<TarListing> list_tar(uint64_t size, const TarReadAt& read);
// The listing of a tar in memory.
TarListing list_tar(ByteSpan tar);

}  // namespace stoker
