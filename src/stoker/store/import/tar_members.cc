#include "stoker/store/import/tar_members.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

namespace stoker {
namespace {

constexpr uint64_t kBlock = 512;
// A GNU long name or a pax header larger than this is damage, not a name.
constexpr uint64_t kMaxExtendedHeader = uint64_t{1} << 20;

uint64_t padded(uint64_t size) { return (size + kBlock - 1) / kBlock * kBlock; }

// A header field's text: up to its first NUL.
std::string field_text(const uint8_t* header, size_t offset, size_t length) {
  const char* start = reinterpret_cast<const char*>(header + offset);
  return std::string(start, strnlen(start, length));
}

// A numeric field: octal digits between spaces or NULs, or GNU's base-256 (first byte 0x80).
std::optional<uint64_t> field_number(const uint8_t* header, size_t offset, size_t length) {
  const uint8_t* p = header + offset;
  if (p[0] == 0x80) {
    uint64_t v = 0;
    for (size_t i = 1; i < length; ++i) {
      if (v >> 56) return std::nullopt;
      v = v << 8 | p[i];
    }
    return v;
  }
  size_t i = 0;
  while (i < length && (p[i] == ' ' || p[i] == 0)) ++i;
  uint64_t v = 0;
  bool digits = false;
  for (; i < length && p[i] >= '0' && p[i] <= '7'; ++i) {
    if (v >> 60) return std::nullopt;
    v = v * 8 + (p[i] - '0');
    digits = true;
  }
  for (; i < length; ++i)
    if (p[i] != ' ' && p[i] != 0) return std::nullopt;
  return digits ? std::optional<uint64_t>(v) : std::optional<uint64_t>(0);
}

// Whether the header's checksum holds, summed unsigned or signed (tarfile accepts either).
bool checksum_holds(const uint8_t* header) {
  const std::optional<uint64_t> stored = field_number(header, 148, 8);
  if (!stored) return false;
  int64_t unsigned_sum = 0, signed_sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const uint8_t byte = i >= 148 && i < 156 ? ' ' : header[i];
    unsigned_sum += byte;
    signed_sum += static_cast<int8_t>(byte);
  }
  return *stored == static_cast<uint64_t>(unsigned_sum) ||
         static_cast<int64_t>(*stored) == signed_sum;
}

bool all_zero(const uint8_t* block) {
  return std::all_of(block, block + kBlock, [](uint8_t b) { return b == 0; });
}

// Applies a pax header's records ("LEN KEY=VALUE\n") of `path` and `size`; false when malformed.
bool apply_pax(const std::string& records, std::optional<std::string>& path,
               std::optional<uint64_t>& size) {
  size_t at = 0;
  while (at < records.size()) {
    if (records[at] == 0) break;  // padding
    size_t length = 0, i = at;
    for (; i < records.size() && records[i] >= '0' && records[i] <= '9'; ++i) {
      if (length > records.size()) return false;
      length = length * 10 + (records[i] - '0');
    }
    if (i == at || i >= records.size() || records[i] != ' ' || length <= i - at + 1 ||
        length > records.size() - at || records[at + length - 1] != '\n')
      return false;
    const std::string record = records.substr(i + 1, at + length - 1 - (i + 1));
    const size_t equals = record.find('=');
    if (equals == std::string::npos) return false;
    const std::string key = record.substr(0, equals), value = record.substr(equals + 1);
    if (key == "path") {
      path = value;
    } else if (key == "size") {
      if (value.empty() || value.size() > 19 ||
          value.find_first_not_of("0123456789") != std::string::npos)
        return false;
      size = std::stoull(value);
    }
    at += length;
  }
  return true;
}

std::string unsupported_kind(char type, const std::string& link) {
  switch (type) {
    case '1':
      return "a hard link to " + link;
    case '2':
      return "a symbolic link to " + link;
    case '3':
      return "a character device";
    case '4':
      return "a block device";
    case '6':
      return "a FIFO";
    case 'S':
      return "a sparse file";
    default:
      return fmt::format("a member of type '{}'", type);
  }
}

}  // namespace

// GCC 12 warns that pax_size's value may be read uninitialised (its bug 80635: an optional's
// payload copied where the optional is known to be empty); it is not.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
Result<TarListing> list_tar(uint64_t size, const TarReadAt& read) {
  TarListing listing;
  // Reads `n` bytes at `at`; false (and the damage said) when the tar ends first.
  auto read_exactly = [&](uint64_t at, uint8_t* out, size_t n) -> Result<bool> {
    STOKER_ASSIGN_OR_RETURN(size_t got, read(at, out, n));
    return got == n;
  };
  // Names the member a damage is about: the last one listed, else the tar's start.
  auto where = [&](uint64_t at) {
    return listing.members.empty()
               ? fmt::format("at byte {}", at)
               : fmt::format("after member {} at byte {}", listing.members.back().name, at);
  };
  std::optional<std::string> long_name, pax_path;
  std::optional<uint64_t> pax_size;
  uint8_t header[kBlock];
  uint64_t at = 0;
  while (true) {
    if (at >= size) {
      // No end-of-archive blocks: tarfile reads this too, unless the last block is cut.
      if (at == 0) listing.damage = "not a tar: it is empty";
      if (at > size || long_name || pax_path || pax_size)
        listing.damage = fmt::format("cut short {}", where(at));
      return listing;
    }
    STOKER_ASSIGN_OR_RETURN(bool whole, read_exactly(at, header, kBlock));
    if (!whole) {
      listing.damage = fmt::format("a header cut short {}", where(at));
      return listing;
    }
    if (all_zero(header)) return listing;
    if (!checksum_holds(header)) {
      listing.damage = at == 0 ? std::string("not a tar: no tar header at its start")
                               : fmt::format("a bad header checksum {}", where(at));
      return listing;
    }
    const char type = static_cast<char>(header[156]);
    const bool ustar = std::memcmp(header + 257, "ustar\0", 6) == 0;
    std::string name = field_text(header, 0, 100);
    if (ustar) {
      const std::string prefix = field_text(header, 345, 155);
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    if (long_name) name = *long_name;
    if (pax_path) name = *pax_path;
    std::optional<uint64_t> member_size = field_number(header, 124, 12);
    if (pax_size) member_size = pax_size;
    if (!member_size) {
      listing.damage = fmt::format("member {}: its size field is not a number", name);
      return listing;
    }
    const uint64_t data = at + kBlock;
    if (*member_size > size - std::min(size, data)) {
      listing.damage = fmt::format("member {}: cut short: its {} bytes run past the tar's end",
                                   name, *member_size);
      listing.cut_member = name;
      return listing;
    }
    const uint64_t next = data + padded(*member_size);
    if (type == 'L' || type == 'x' || type == 'g' || type == 'K') {
      if (*member_size > kMaxExtendedHeader) {
        listing.damage =
            fmt::format("member {}: an extended header of {} bytes", name, *member_size);
        return listing;
      }
      std::string text(*member_size, '\0');
      STOKER_ASSIGN_OR_RETURN(
          bool read_whole,
          read_exactly(data, reinterpret_cast<uint8_t*>(text.data()), text.size()));
      if (!read_whole) {
        listing.damage = fmt::format("member {}: cut short", name);
        return listing;
      }
      if (type == 'L') long_name = std::string(text.c_str());
      if (type == 'x' && !apply_pax(text, pax_path, pax_size)) {
        listing.damage = fmt::format("a malformed pax header {}", where(at));
        return listing;
      }
      at = next;
      continue;
    }
    if (type != '5') {
      TarMember member;
      member.name = name;
      member.offset = data;
      member.size = *member_size;
      if (type != '0' && type != '\0' && type != '7') {
        member.unsupported = unsupported_kind(type, field_text(header, 157, 100));
        member.size = 0;
      }
      listing.members.push_back(std::move(member));
    }
    long_name.reset();
    pax_path.reset();
    pax_size.reset();
    at = next;
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

TarListing list_tar(ByteSpan tar) {
  auto read = [&](uint64_t offset, uint8_t* out, size_t n) -> Result<size_t> {
    const size_t got = offset >= tar.size ? 0 : std::min<uint64_t>(n, tar.size - offset);
    if (got > 0) std::memcpy(out, tar.data + offset, got);
    return got;
  };
  return list_tar(tar.size, read).value();
}

}  // namespace stoker
