#include "stoker/access/remote_video_opener.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "stoker/video/video_reference.h"

namespace stoker::remote {
namespace {

// A video's bytes by ranged GETs of `store`'s object.
class RemoteVideoBytes : public video::VideoBytes {
 public:
  RemoteVideoBytes(std::shared_ptr<const ObjectStore> store, video::VideoReference reference)
      : store_(std::move(store)), reference_(std::move(reference)) {}
  const std::string& name() const override { return unnamed_; }
  uint64_t size() const override { return reference_.size; }

  Status read(uint64_t offset, uint8_t* out, size_t n) override {
    if (n == 0) return Status::ok();
    uint64_t got = 0;
    const ByteSink sink = [&](uint64_t at, const char* data, size_t size) {
      if (at < offset || at + size > offset + n)
        return io_error(
            fmt::format("{}: the server sent bytes outside the range asked for", reference_.url));
      std::memcpy(out + (at - offset), data, size);
      got = std::max<uint64_t>(got, at + size - offset);
      return Status::ok();
    };
    // Without a listed ETag, the one its first GET gave is asked of the next: one version a
    // clip.
    Result<HttpResponse> got_response =
        store_->get(reference_.name, ByteRange{offset, n}, sink,
                    reference_.etag.empty() ? first_etag_ : reference_.etag);
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

 private:
  std::shared_ptr<const ObjectStore> store_;
  video::VideoReference reference_;
  std::string first_etag_;     // the first GET's ETag
  const std::string unnamed_;  // a record's: the loader names it
};

}  // namespace

std::vector<Result<std::string>> remote_video_references(const std::string& location,
                                                         const std::vector<ListedFile>& files) {
  std::vector<Result<std::string>> references;
  references.reserve(files.size());
  if (files.empty()) return references;
  std::shared_ptr<const ObjectStore> store = files.front().store;
  video::register_reference_opener(location,
                                   [store](const video::VideoReference& reference)
                                       -> Result<std::unique_ptr<video::VideoBytes>> {
                                     return std::unique_ptr<video::VideoBytes>(
                                         std::make_unique<RemoteVideoBytes>(store, reference));
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
