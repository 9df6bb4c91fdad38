#include "stoker/store/import/tar_index.h"

#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "stoker/store/import/npy_header.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/checksum.h"
#include "stoker/util/regular_file.h"
#include "stoker/util/saved_form.h"

namespace stoker {
namespace {

constexpr char kMagic[8] = {'S', 'T', 'K', 'T', 'A', 'R', 'I', '2'};
constexpr uint64_t kMaxIndexBytes = uint64_t{4} << 30;
constexpr size_t kChunk = size_t{1} << 20;

}  // namespace

bool is_npy_name(const std::string& name) {
  if (name.size() < 4) return false;
  std::string tail = name.substr(name.size() - 4);
  for (char& c : tail)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return tail == ".npy";
}

Result<TarIndex> build_tar_index(const std::string& path) {
  STOKER_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path));
  STOKER_ASSIGN_OR_RETURN(FileIdentity identity, file_identity(file.fd(), path));
  return build_tar_index(path, file.fd(), identity);
}

Result<TarIndex> build_tar_index(const std::string& path, int fd, const FileIdentity& identity) {
  TarIndex index;
  index.path = path;
  index.identity = identity;
  auto read = [&](uint64_t offset, uint8_t* out, size_t n) {
    return read_at(fd, path, offset, out, n);
  };
  STOKER_ASSIGN_OR_RETURN(index.listing, list_tar(index.identity.size, read));
  // The largest member's bytes, up to kChunk: a 1 MiB buffer a tar of small members costs
  // page faults and zeroing out of proportion with its reads.
  uint64_t largest = kMaxNpyHeaderBytes;
  for (const TarMember& member : index.listing.members) largest = std::max(largest, member.size);
  std::vector<uint8_t> chunk(static_cast<size_t>(std::min<uint64_t>(kChunk, largest)));
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                       &XXH3_freeState);
  if (!state) return io_error(fmt::format("{}: no memory to index it", path));
  static_assert(kChunk >= kMaxNpyHeaderBytes, "a member's first chunk holds its npy header");
  for (const TarMember& member : index.listing.members) {
    XXH3_64bits_reset(state.get());
    std::string& head = index.npy_heads.emplace_back();
    for (uint64_t done = 0; done < member.size;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), member.size - done));
      STOKER_ASSIGN_OR_RETURN(size_t got, read(member.offset + done, chunk.data(), n));
      if (got != n) return io_error(fmt::format("{}: it shrank while its index was built", path));
      XXH3_64bits_update(state.get(), chunk.data(), n);
      if (done == 0 && is_npy_name(member.name))
        head.assign(reinterpret_cast<const char*>(chunk.data()),
                    npy_header_size({chunk.data(), n}));
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
  put_u64(body, static_cast<uint64_t>(index.identity.stamp));
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
    put_text(body, index.npy_heads[i]);
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
      !in.count(n, 48))
    return damaged;
  index.identity.stamp = static_cast<int64_t>(mtime);
  index.listing.members.resize(n);
  index.checksums.resize(n);
  index.npy_heads.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TarMember& member = index.listing.members[i];
    if (!in.text(member.name) || !in.u64(member.offset) || !in.u64(member.size) ||
        !in.text(member.unsupported) || !in.u64(index.checksums[i]) ||
        !in.text(index.npy_heads[i]) || index.npy_heads[i].size() > kMaxNpyHeaderBytes ||
        member.offset > index.identity.size || member.size > index.identity.size - member.offset)
      return damaged;
  }
  if (!in.done()) return damaged;
  return index;
}

Result<TarIndex> tar_index_of(const InPlaceFiles& files, size_t tar, const std::string& cache_dir) {
  const std::string& name = files.names()[tar];
  auto build = [&]() -> Result<TarIndex> {
    STOKER_ASSIGN_OR_RETURN(OpenFile opened, files.open(tar, nullptr));
    return build_tar_index(name, opened.fd, opened.identity);
  };
  if (cache_dir.empty()) return build();
  const std::string saved =
      fmt::format("{}/{}/{}.index", cache_dir, kTarIndexFolder, files.key(tar));
  STOKER_ASSIGN_OR_RETURN(FileIdentity now, files.identity(tar));
  if (Result<std::string> bytes = read_file(saved, kMaxIndexBytes); bytes.is_ok()) {
    Result<TarIndex> index = decode_tar_index(
        {reinterpret_cast<const uint8_t*>(bytes.value().data()), bytes.value().size()}, name);
    if (index.is_ok() && index.value().identity == now) return index;
  }
  STOKER_ASSIGN_OR_RETURN(TarIndex index, build());
  save_cache_file(saved, encode_tar_index(index));
  return index;
}

}  // namespace stoker
