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
    const ByteSink sink = [&](uint64_t offset, const char* data, size_t size) -> Status {
      if (offset > info.bytes || size > info.bytes - offset)  // never wraps
        return corrupt(fmt::format("{}: larger than the {} bytes expected",
                                   store->describe(info.file), info.bytes));
      end = std::max(end, offset + size);
      while (size > 0) {
        const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
          return io_error(fmt::format("{}: cannot write its download: {}",
                                      store->describe(info.file), std::strerror(errno)));
        data += n;
        size -= static_cast<size_t>(n);
        offset += static_cast<uint64_t>(n);
      }
      return Status::ok();
    };
    STOKER_RETURN_IF_ERROR(store->get(info.file, std::nullopt, sink, if_match, cancel).status());
    // The file was preallocated to its size: bytes short of it would read as zeros.
    if (end != info.bytes)
      return corrupt(fmt::format("{}: {} bytes downloaded, {} expected; nothing was kept",
                                 store->describe(info.file), end, info.bytes));
    return Status::ok();
  };
}

}  // namespace stoker::remote
