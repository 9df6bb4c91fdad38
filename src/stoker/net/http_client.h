#pragma once
// HttpClient: GET (whole or a byte range), HEAD, PUT and DELETE over libcurl
// (docs/REMOTE-DESIGN.md, section 4). One libcurl share handle per process holds the connections,
// DNS answers and TLS sessions, so transfers from any thread reuse them. Each transfer:
// - times out: connect 10 s; a stall (under 16 KiB/s for 30 s); a total limit when asked (the
//   transfer's, retries included);
// - retries what RetryPolicy says, a cut body resumed from the bytes received with `Range` and
//   `If-Match` (the ETag first seen); a server that ignores Range (a 200 with the whole object
//   to a Range past its start) has the object rewritten from 0 once, and is not retried after
//   that answer (its message says the server ignores Range);
// - is cancelled within ~50 ms of `cancelled()` turning true (a transfer is driven in 50 ms
//   polls, and so is the wait before a retry);
// - fails with one line naming the redacted URL, the last status or transport error, and the
//   attempts: `URL: HTTP 503 after 10 attempts over 41.2 s`. 404 and 410 are kNotFound, 412
//   kCorrupt (the object changed since its ETag was read), a cancel kCancelled, the rest
//   kIoError. An S3 error body adds only its <Code>; no message holds a header or a secret.
// Thread-safe: any number of threads may run transfers on one client at once.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "stoker/net/aws_credentials.h"
#include "stoker/net/retry_policy.h"
#include "stoker/util/status.h"

namespace stoker::remote {

// Receives a body: `size` bytes at `data` belong at `offset` of the object. A range may arrive
// more than once (a retry that restarts); a sink writes at the offset, it does not append. A
// non-ok Status stops the transfer with that Status.
using ByteSink = std::function<Status(uint64_t offset, const char* data, size_t size)>;

// Bytes [offset, offset + length) of an object; length > 0.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct HttpRequest {
  std::string url;           // as sent: may hold userinfo and a query
  std::string redacted_url;  // for messages
  // S3 signing (SigV4 by libcurl) with these keys and region; nullptr: unsigned.
  const AwsCredentials* sigv4 = nullptr;
  std::string if_match;       // an ETag the object must still have; "" for none
  std::string if_none_match;  // an ETag for which the server answers 304; "" for none
  // The whole transfer's limit, its retries included; 0: none (a stall still ends an attempt).
  double total_timeout_s = 0;
  std::string denied_hint;  // appended to a 401 or 403 message (where the keys came from)
  // Polled on the transfer's thread while it runs; true ends it (kCancelled). Empty: never.
  std::function<bool()> cancelled;
};

struct HttpResponse {
  long status = 0;               // the final status: 200, 206, 304
  std::string etag;              // as the server sent it, quotes included; "" if none
  std::optional<uint64_t> size;  // the object's size (Content-Length, Content-Range's total)
  int attempts = 0;
};

struct HttpClientOptions {
  long connect_timeout_s = 10;
  long low_speed_bytes_per_s = 16 * 1024;  // slower than this ...
  long low_speed_time_s = 30;              // ... for this long is a stall
  RetryLimits retry;
};

class HttpClient {
 public:
  // A client; kUnsupported if libcurl's global init is not thread-safe (checked once per
  // process, at the first client).
  static Result<std::shared_ptr<HttpClient>> create(HttpClientOptions options = {});

  // The body of `request.url` (or of `range` of it) into `sink`. Its status is 200 or 206, or
  // 304 with `if_none_match` (nothing written).
  Result<HttpResponse> get(const HttpRequest& request, std::optional<ByteRange> range,
                           const ByteSink& sink) const;
  // The object's size and ETag without its body.
  Result<HttpResponse> head(const HttpRequest& request) const;
  // Uploads the file at `path` (re-read from its start on each attempt), or `bytes`.
  Result<HttpResponse> put_file(const HttpRequest& request, const std::string& path) const;
  Result<HttpResponse> put_bytes(const HttpRequest& request, std::string_view bytes) const;
  // Deletes the object (S3 answers 204 whether or not it existed).
  Result<HttpResponse> remove(const HttpRequest& request) const;

 private:
  explicit HttpClient(HttpClientOptions options) : options_(options) {}

  HttpClientOptions options_;
};

}  // namespace stoker::remote
