#include "stoker/store/import/tar_index.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"
#include "stoker/util/regular_file.h"
#include "stoker/util/saved_form.h"

namespace stoker {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'K', 'T', 'A', 'R', 'I', '1'};
constexpr uint64_t kMaxIndexBytes = uint64_t{4} << 30;
constexpr size_t kChunk = size_t{1} << 20;

// pread until `n` bytes or the end; errors name `path`.
Result<size_t> read_at(int fd, const std::string& path, uint64_t offset, uint8_t* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return io_error(fmt::format("{}: {}", path, std::strerror(errno)));
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace

Result<TarIdentity> tar_identity(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(fmt::format("{}: {}", path, std::strerror(errno)));
  return TarIdentity{static_cast<uint64_t>(st.st_size),
                     int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

Result<TarIndex> build_tar_index(const std::string& path) {
  STOKER_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path));
  TarIndex index;
  index.path = path;
  STOKER_ASSIGN_OR_RETURN(index.identity, tar_identity(file.fd(), path));
  auto read = [&](uint64_t offset, uint8_t* out, size_t n) {
    return read_at(file.fd(), path, offset, out, n);
  };
  STOKER_ASSIGN_OR_RETURN(index.listing, list_tar(index.identity.size, read));
  std::vector<uint8_t> chunk(kChunk);
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                       &XXH3_freeState);
  if (!state) return io_error(fmt::format("{}: no memory to index it", path));
  for (const TarMember& member : index.listing.members) {
    XXH3_64bits_reset(state.get());
    for (uint64_t done = 0; done < member.size;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, member.size - done));
      STOKER_ASSIGN_OR_RETURN(size_t got, read(member.offset + done, chunk.data(), n));
      if (got != n) return io_error(fmt::format("{}: it shrank while its index was built", path));
      XXH3_64bits_update(state.get(), chunk.data(), n);
      done += n;
    }
    index.checksums.push_back(XXH3_64bits_digest(state.get()));
  }
  return index;
}

Result<std::string> read_member(int fd, const TarIndex& index, size_t member) {
  const TarMember& m = index.listing.members[member];
  std::string bytes(m.size, '\0');
  STOKER_ASSIGN_OR_RETURN(size_t got, read_at(fd, "member " + m.name, m.offset,
                                              reinterpret_cast<uint8_t*>(bytes.data()), m.size));
  if (got != m.size || xxh3_64(bytes.data(), bytes.size()) != index.checksums[member])
    return corrupt(fmt::format(
        "member {}: not the bytes indexed (the tar changed after its index was built)", m.name));
  return bytes;
}

std::string encode_tar_index(const TarIndex& index) {
  std::string body;
  put_text(body, index.path);
  put_u64(body, index.identity.size);
  put_u64(body, static_cast<uint64_t>(index.identity.mtime_ns));
  put_text(body, index.listing.damage);
  put_text(body, index.listing.cut_member);
  put_u64(body, index.listing.members.size());
  for (size_t i = 0; i < index.listing.members.size(); ++i) {
    const TarMember& member = index.listing.members[i];
    put_text(body, member.name);
    put_u64(body, member.offset);
    put_u64(body, member.size);
    put_text(body, member.unsupported);
    put_u64(body, index.checksums[i]);
  }
  return seal(kMagic, body);
}

Result<TarIndex> decode_tar_index(ByteSpan bytes, const std::string& path) {
  const Status damaged = corrupt(fmt::format("{}: its saved index is damaged", path));
  const std::optional<ByteSpan> body = unseal(bytes, kMagic);
  if (!body) return damaged;
  SavedReader in(*body);
  TarIndex index;
  uint64_t mtime = 0, n = 0;
  if (!in.text(index.path) || index.path != path || !in.u64(index.identity.size) ||
      !in.u64(mtime) || !in.text(index.listing.damage) || !in.text(index.listing.cut_member) ||
      !in.count(n, 40))
    return damaged;
  index.identity.mtime_ns = static_cast<int64_t>(mtime);
  index.listing.members.resize(n);
  index.checksums.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TarMember& member = index.listing.members[i];
    if (!in.text(member.name) || !in.u64(member.offset) || !in.u64(member.size) ||
        !in.text(member.unsupported) || !in.u64(index.checksums[i]) ||
        member.offset > index.identity.size || member.size > index.identity.size - member.offset)
      return damaged;
  }
  if (!in.done()) return damaged;
  return index;
}

Result<TarIndex> cached_tar_index(const std::string& path, const std::string& cache_dir) {
  if (cache_dir.empty()) return build_tar_index(path);
  const std::string file = cache_file_of(path, cache_dir, "tar-indexes", "index");
  {
    STOKER_ASSIGN_OR_RETURN(RegularFile tar, RegularFile::open(path));
    STOKER_ASSIGN_OR_RETURN(TarIdentity now, tar_identity(tar.fd(), path));
    if (Result<std::string> saved = read_file(file, kMaxIndexBytes); saved.is_ok()) {
      Result<TarIndex> index = decode_tar_index(
          {reinterpret_cast<const uint8_t*>(saved.value().data()), saved.value().size()}, path);
      if (index.is_ok() && index.value().identity == now) return index;
    }
  }
  STOKER_ASSIGN_OR_RETURN(TarIndex index, build_tar_index(path));
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ignored);
  (void)write_file_atomically(file, encode_tar_index(index));  // a cache: best effort
  return index;
}

}  // namespace stoker
