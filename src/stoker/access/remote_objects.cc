#include "stoker/access/remote_objects.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

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
                            uint64_t at) {
  return [store = std::move(store), if_match = std::move(if_match), at](
             const ShardInfo& info, int fd, const std::function<bool()>& cancelled) -> Status {
    uint64_t end = 0;  // of the bytes received (a transfer resumes where it was cut)
    const RangeWriter write = file_writer(fd, store->describe(info.file));
    const ByteSink sink = [&](uint64_t offset, const char* data, size_t size) -> Status {
      if (offset > info.bytes || size > info.bytes - offset)  // never wraps
        return corrupt(fmt::format("{}: larger than the {} bytes expected",
                                   store->describe(info.file), info.bytes));
      end = std::max(end, offset + size);
      return write(at + offset, data, size);
    };
    STOKER_RETURN_IF_ERROR(store->get(info.file, std::nullopt, sink, if_match, cancelled).status());
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

namespace {

// One GET: the bytes [offset, offset + size) of the object, covering the asked ranges `parts`
// (indices, by offset) and the gaps between them.
struct RangeRequest {
  uint64_t offset = 0;
  uint64_t size = 0;
  std::vector<size_t> parts;
};

// The ranges in GETs: ranges in offset order, one after another with at most kCoalesceGap
// bytes between them, are asked in one.
std::vector<RangeRequest> coalesce(const std::vector<FileRange>& ranges) {
  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ranges[a].offset < ranges[b].offset; });
  std::vector<RangeRequest> requests;
  for (size_t i : order) {
    const FileRange& range = ranges[i];
    if (!requests.empty()) {
      RangeRequest& last = requests.back();
      const uint64_t end = last.offset + last.size;
      if (range.offset >= end && range.offset - end <= kCoalesceGap) {
        last.size = range.offset + range.size - last.offset;
        last.parts.push_back(i);
        continue;
      }
    }
    requests.push_back({range.offset, range.size, {i}});
  }
  return requests;
}

}  // namespace

Status get_ranges(const ObjectStore& store, const std::string& name, uint64_t object_size,
                  const std::vector<FileRange>& ranges, const std::string& if_match,
                  const std::string& what, const RangeWriter& write,
                  const std::function<bool()>& cancelled) {
  std::vector<uint64_t> place(ranges.size());  // where each range goes
  for (size_t i = 1; i < ranges.size(); ++i) place[i] = place[i - 1] + ranges[i - 1].size;
  for (const RangeRequest& request : coalesce(ranges)) {
    const std::string asked =
        fmt::format("bytes [{}, {})", request.offset, request.offset + request.size);
    uint64_t received = 0;
    // Each byte received goes to the asked range holding it; a gap's are dropped.
    const ByteSink sink = [&](uint64_t offset, const char* data, size_t size) -> Status {
      if (offset < request.offset || offset - request.offset > request.size ||
          size > request.size - (offset - request.offset))
        return corrupt(
            fmt::format("{}: {}: bytes past the {} asked for", store.describe(name), what, asked));
      received = std::max(received, offset - request.offset + size);
      for (size_t i : request.parts) {
        const FileRange& range = ranges[i];
        const uint64_t first = std::max(offset, range.offset);
        const uint64_t end = std::min(offset + size, range.offset + range.size);
        if (first >= end) continue;
        STOKER_RETURN_IF_ERROR(write(place[i] + (first - range.offset), data + (first - offset),
                                     static_cast<size_t>(end - first)));
      }
      return Status::ok();
    };
    Result<HttpResponse> got =
        store.get(name, ByteRange{request.offset, request.size}, sink, if_match, cancelled);
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
    if (received != request.size)
      return corrupt(fmt::format("{}: {}: {} bytes received of the {} asked for",
                                 store.describe(name), what, received, asked));
  }
  return Status::ok();
}

}  // namespace stoker::remote
