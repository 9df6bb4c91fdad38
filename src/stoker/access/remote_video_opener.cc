#include "stoker/access/remote_video_opener.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "stoker/access/remote_objects.h"
#include "stoker/store/in_place_files.h"
#include "stoker/util/cancel_scope.h"
#include "stoker/util/checksum.h"
#include "stoker/video/video_reference.h"

namespace stoker::remote {
namespace {

constexpr uint64_t kBlock = video::kRemoteBlockBytes;

// The cache's objects of `reference`'s blocks, named as remote_video_opener.h says.
std::vector<ShardInfo> block_objects(const video::VideoReference& reference) {
  const std::string& name = reference.name;
  const std::string file = name.substr(name.rfind('/') + 1);
  const std::string version = reference.etag.empty() ? reference.version : reference.etag;
  std::vector<ShardInfo> blocks;
  for (uint64_t start = 0, b = 0; start < reference.size; start += kBlock, ++b) {
    ShardInfo block;
    block.file = fmt::format("{}@{}", file, b);
    block.bytes = std::min(kBlock, reference.size - start);
    const std::string identity =
        fmt::format("{}\n{}\n{}\n{}", reference.url, version, reference.size, b);
    block.index_checksum = xxh3_64(identity.data(), identity.size());
    blocks.push_back(std::move(block));
  }
  return blocks;
}

// A video's bytes by ranged GETs of `store`'s object, block by block through the cache.
class RemoteVideoBytes : public video::VideoBytes {
 public:
  RemoteVideoBytes(std::shared_ptr<const ObjectStore> store, video::VideoReference reference,
                   DatasetCache blocks)
      : store_(std::move(store)), reference_(std::move(reference)), blocks_(std::move(blocks)) {}
  const std::string& name() const override { return unnamed_; }
  uint64_t size() const override { return reference_.size; }

  Status read(uint64_t offset, uint8_t* out, size_t n) override {
    while (n > 0) {
      const uint64_t b = offset / kBlock;
      const size_t within = static_cast<size_t>(offset - b * kBlock);
      const size_t take = static_cast<size_t>(
          std::min<uint64_t>(n, std::min(kBlock, reference_.size - b * kBlock) - within));
      STOKER_RETURN_IF_ERROR(read_block(b, within, out, take));
      offset += take;
      out += take;
      n -= take;
    }
    return Status::ok();
  }

 private:
  // Bytes [within, within + n) of block `b`: from the cache, where it is kept or fetched into;
  // by a GET of them alone where the budget has no room for it. The cancellation in scope (the
  // sample's: util/cancel_scope.h) ends a fetch, or a wait for another process's, at once.
  Status read_block(uint64_t b, size_t within, uint8_t* out, size_t n) {
    const uint64_t start = b * kBlock;
    const std::function<bool()>& cancelled = cancellation_in_scope();
    const ShardDownload download = [&](const ShardInfo& block, int fd,
                                       const std::function<bool()>& fetch_cancelled) {
      return get(start, block.bytes, file_writer(fd, reference_.url), fetch_cancelled);
    };
    EvictionAdvice lru;
    lru.policy = EvictionPolicy::kLru;
    Result<CachedShard> kept = blocks_.fetch(static_cast<int>(b), download, lru, cancelled);
    if (kept.status().code() == StatusCode::kNoRoom)
      return get(
          start + within, n,
          [out](uint64_t at, const char* data, size_t size) {
            std::memcpy(out + at, data, size);
            return Status::ok();
          },
          cancelled);
    STOKER_RETURN_IF_ERROR(kept.status());
    STOKER_ASSIGN_OR_RETURN(size_t got, read_at(kept.value().fd(), blocks_.dir(), within, out, n));
    if (got != n)
      return io_error(fmt::format("{}: its cached block {} is short", reference_.url, b));
    return Status::ok();
  }

  // Bytes [offset, offset + n) GETted, each written at its place from `offset`; `cancelled`
  // turning true ends the GET (kCancelled).
  Status get(uint64_t offset, uint64_t n, const RangeWriter& write,
             const std::function<bool()>& cancelled) {
    if (n == 0) return Status::ok();
    uint64_t got = 0;
    const ByteSink sink = [&](uint64_t at, const char* data, size_t size) {
      if (at < offset || at + size > offset + n)
        return io_error(
            fmt::format("{}: the server sent bytes outside the range asked for", reference_.url));
      got = std::max<uint64_t>(got, at + size - offset);
      return write(at - offset, data, size);
    };
    // Without a listed ETag, the one its first GET gave is asked of the next: one version a
    // clip.
    Result<HttpResponse> got_response =
        store_->get(reference_.name, ByteRange{offset, n}, sink,
                    reference_.etag.empty() ? first_etag_ : reference_.etag, cancelled);
    // A video gone since its listing is a read that failed, as one that changed.
    if (got_response.status().code() == StatusCode::kNotFound)
      return io_error(got_response.status().message());
    STOKER_RETURN_IF_ERROR(got_response.status());
    const HttpResponse& response = got_response.value();
    if (first_etag_.empty()) first_etag_ = response.etag;
    if (reference_.etag.empty() && response.size && *response.size != reference_.size)
      return corrupt(
          fmt::format("{}: changed on the server since it was listed ({} bytes, "
                      "listed with {})",
                      reference_.url, *response.size, reference_.size));
    if (got != n)
      return io_error(fmt::format("{}: the server sent {} of bytes [{}, {})", reference_.url, got,
                                  offset, offset + n));
    return Status::ok();
  }

  std::shared_ptr<const ObjectStore> store_;
  video::VideoReference reference_;
  DatasetCache blocks_;
  std::string first_etag_;     // the first GET's ETag
  const std::string unnamed_;  // a record's: the loader names it
};

}  // namespace

std::vector<Result<std::string>> remote_video_references(const std::string& location,
                                                         const std::vector<ListedFile>& files,
                                                         std::shared_ptr<ShardCache> cache) {
  std::vector<Result<std::string>> references;
  references.reserve(files.size());
  if (files.empty()) return references;
  std::shared_ptr<const ObjectStore> store = files.front().store;
  video::register_reference_opener(
      location,
      [store, cache, location](
          const video::VideoReference& reference) -> Result<std::unique_ptr<video::VideoBytes>> {
        STOKER_ASSIGN_OR_RETURN(
            DatasetCache blocks,
            cache->objects(location, block_objects(reference), ObjectCheck::kSealed));
        return std::unique_ptr<video::VideoBytes>(
            std::make_unique<RemoteVideoBytes>(store, reference, std::move(blocks)));
      });
  for (const ListedFile& file : files) {
    if (!file.unreadable.is_ok()) {
      references.emplace_back(file.unreadable);
      continue;
    }
    video::VideoReference reference;
    reference.source = location;
    reference.name = file.name;
    reference.url = store->describe(file.name);
    reference.size = file.size;
    reference.etag = file.etag;
    reference.version = file.version;
    references.emplace_back(video::encode_video_reference(reference));
  }
  return references;
}

}  // namespace stoker::remote
