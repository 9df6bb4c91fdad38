#include "stoker/access/remote_objects.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace stoker::remote {

Result<std::shared_ptr<const ObjectStore>> store_of(const RemoteUrl& url) {
  const Environment env = process_environment();
  HttpClientOptions options;
  STOKER_ASSIGN_OR_RETURN(options.retry, retry_limits_for(env(kRetrySecondsVariable)));
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<HttpClient> client, HttpClient::create(options));
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<ObjectStore> store,
                          open_object_store(url, std::move(client), env));
  return std::shared_ptr<const ObjectStore>(std::move(store));
}

ShardDownload download_from(std::shared_ptr<const ObjectStore> store, std::string if_match,
                            const std::atomic<bool>* cancel) {
  return [store = std::move(store), if_match = std::move(if_match), cancel](const ShardInfo& info,
                                                                            int fd) -> Status {
    uint64_t end = 0;  // of the bytes received (a transfer resumes where it was cut)
    const RangeWriter write = file_writer(fd, store->describe(info.file));
    const ByteSink sink = [&](uint64_t offset, const char* data, size_t size) -> Status {
      if (offset > info.bytes || size > info.bytes - offset)  // never wraps
        return corrupt(fmt::format("{}: larger than the {} bytes expected",
                                   store->describe(info.file), info.bytes));
      end = std::max(end, offset + size);
      return write(offset, data, size);
    };
    STOKER_RETURN_IF_ERROR(store->get(info.file, std::nullopt, sink, if_match, cancel).status());
    // The file was preallocated to its size: bytes short of it would read as zeros.
    if (end != info.bytes)
      return corrupt(fmt::format("{}: {} bytes downloaded, {} expected; nothing was kept",
                                 store->describe(info.file), end, info.bytes));
    return Status::ok();
  };
}

RangeWriter file_writer(int fd, std::string what) {
  return [fd, what = std::move(what)](uint64_t at, const char* data, size_t size) -> Status {
    while (size > 0) {
      const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        return io_error(
            fmt::format("{}: cannot write its download: {}", what, std::strerror(errno)));
      data += n;
      size -= static_cast<size_t>(n);
      at += static_cast<uint64_t>(n);
    }
    return Status::ok();
  };
}

Status get_ranges(const ObjectStore& store, const std::string& name, uint64_t object_size,
                  const std::vector<FileRange>& ranges, const std::string& if_match,
                  const std::string& what, const RangeWriter& write,
                  const std::atomic<bool>* cancel) {
  uint64_t at = 0;  // where the range goes
  for (const FileRange& range : ranges) {
    const std::string asked =
        fmt::format("bytes [{}, {})", range.offset, range.offset + range.size);
    uint64_t received = 0;
    const ByteSink sink = [&](uint64_t offset, const char* data, size_t size) -> Status {
      if (offset < range.offset || offset - range.offset > range.size ||
          size > range.size - (offset - range.offset))
        return corrupt(
            fmt::format("{}: {}: bytes past the {} asked for", store.describe(name), what, asked));
      received = std::max(received, offset - range.offset + size);
      return write(at + (offset - range.offset), data, size);
    };
    Result<HttpResponse> got =
        store.get(name, ByteRange{range.offset, range.size}, sink, if_match, cancel);
    if (!got.is_ok()) {  // "URL: what: why"
      std::string why = got.status().message();
      const std::string url = store.describe(name);
      if (why.rfind(url + ": ", 0) == 0) why.erase(0, url.size() + 2);
      return Status(got.status().code(), fmt::format("{}: {}: {}", url, what, why));
    }
    const HttpResponse& response = got.value();
    if (response.status != 206)
      return corrupt(
          fmt::format("{}: {}: asked for {}, the server answered status {}, not 206 "
                      "(the range); it must serve byte ranges",
                      store.describe(name), what, asked, response.status));
    if (response.size != object_size)
      return corrupt(fmt::format(
          "{}: {}: the server gives its size as {}, not the {} listed", store.describe(name), what,
          response.size ? std::to_string(*response.size) : "none", object_size));
    if (received != range.size)
      return corrupt(fmt::format("{}: {}: {} bytes received of the {} asked for",
                                 store.describe(name), what, received, asked));
    at += range.size;
  }
  return Status::ok();
}

}  // namespace stoker::remote
