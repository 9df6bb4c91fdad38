#include "stoker/net/http_client.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

#include "stoker/net/ca_bundle.h"

namespace stoker::remote {
namespace {

constexpr uint64_t kUnknownEnd = std::numeric_limits<uint64_t>::max();
constexpr size_t kErrorBodyLimit = 64 * 1024;
constexpr long kPollMs = 50;

// libcurl's global init, once per process, refused unless libcurl says it is thread-safe (then
// a second library in the process initialising it too does no harm; contract 9).
Status init_libcurl() {
  static const Status status = [] {
    const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
    if ((info->features & CURL_VERSION_THREADSAFE) == 0) {
      return unsupported(fmt::format(
          "libcurl {} was built without a thread-safe global init (feature 'threadsafe'); "
          "remote datasets need it",
          info->version));
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      return unsupported("libcurl's global init failed");
    }
    return Status::ok();
  }();
  return status;
}

// The process's share handle: connections, DNS answers and TLS sessions for every transfer.
// Never freed (a transfer may still run in a thread being torn down at exit).
CURLSH* shared_handle() {
  static CURLSH* const share = [] {
    static std::mutex locks[CURL_LOCK_DATA_LAST];
    CURLSH* handle = curl_share_init();
    curl_share_setopt(
        handle, CURLSHOPT_LOCKFUNC,
        +[](CURL*, curl_lock_data data, curl_lock_access, void*) { locks[data].lock(); });
    curl_share_setopt(
        handle, CURLSHOPT_UNLOCKFUNC,
        +[](CURL*, curl_lock_data data, void*) { locks[data].unlock(); });
    for (curl_lock_data data :
         {CURL_LOCK_DATA_CONNECT, CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_SSL_SESSION}) {
      curl_share_setopt(handle, CURLSHOPT_SHARE, data);
    }
    return handle;
  }();
  return share;
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double random_unit() {
  thread_local std::mt19937_64 engine(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

bool cancelled(const HttpRequest& request) { return request.cancelled && request.cancelled(); }

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         strncasecmp(text.data(), prefix.data(), prefix.size()) == 0;
}

std::string trimmed(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return "";
  return std::string(text.substr(begin, text.find_last_not_of(" \t\r\n") + 1 - begin));
}

// An ETag as it may be sent back in If-Match and If-None-Match: up to 1 KiB of visible ASCII
// (RFC 9110's etagc, quotes and W/ included); anything else is no ETag, so that a server's bare
// CR never starts a header of its choosing in a later request.
std::string safe_etag(std::string_view value) {
  const bool visible = std::all_of(value.begin(), value.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
  return visible && value.size() <= 1024 ? std::string(value) : std::string();
}

// Where a PUT's body comes from; re-read from its start by each attempt (and on libcurl's seeks).
struct BodyUpload {
  std::string_view bytes;
  FILE* file = nullptr;
  size_t position = 0;
};

// One attempt's view of a transfer, shared with libcurl's callbacks.
struct Attempt {
  const ByteSink* sink = nullptr;
  uint64_t want_begin = 0;  // the object's bytes wanted: [want_begin, want_end)
  uint64_t want_end = kUnknownEnd;
  uint64_t cursor = 0;      // bytes [want_begin, cursor) are in the sink
  uint64_t range_from = 0;  // the first byte of the Range this attempt asked (0: from the start)
  BodyUpload* upload = nullptr;
  // The current response (a redirect or a 100 Continue starts another).
  long status = 0;
  std::string etag;
  std::optional<uint64_t> size;
  uint64_t body_start = 0;  // the object offset of this response's first body byte
  uint64_t body_seen = 0;
  std::string error_body;
  Status sink_status;
  std::string if_match;  // the If-Match this attempt sent ("" for none)
};

// Whether a response's ETag `answered` is the one If-Match sent, `sent`: equal once a weak
// prefix and quotes are set aside (a server that ignores If-Match answers another object's).
bool same_etag(std::string_view answered, std::string_view sent) {
  const auto bare = [](std::string_view tag) {
    if (tag.substr(0, 2) == "W/") tag.remove_prefix(2);
    if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"')
      tag = tag.substr(1, tag.size() - 2);
    return tag;
  };
  return bare(answered) == bare(sent);
}

// Whether the attempt's successful response is of another version than its If-Match named.
bool answered_another_version(const Attempt& a) {
  return !a.if_match.empty() && !a.etag.empty() && !same_etag(a.etag, a.if_match);
}

bool success(long status) { return status >= 200 && status < 300; }

size_t on_header(char* data, size_t one, size_t count, void* user) {
  Attempt& a = *static_cast<Attempt*>(user);
  const std::string_view line(data, one * count);
  if (starts_with_nocase(line, "HTTP/")) {
    const size_t space = line.find(' ');
    a.status = space == std::string_view::npos
                   ? 0
                   : std::atol(std::string(line.substr(space + 1, 3)).c_str());
    a.etag.clear();
    a.size.reset();
    a.body_start = 0;
    a.body_seen = 0;
  } else if (starts_with_nocase(line, "ETag:")) {
    a.etag = safe_etag(trimmed(line.substr(5)));
  } else if (starts_with_nocase(line, "Content-Length:") && a.status == 200) {
    a.size = std::strtoull(trimmed(line.substr(15)).c_str(), nullptr, 10);
  } else if (starts_with_nocase(line, "Content-Range:")) {
    uint64_t first = 0, last = 0, total = 0;
    if (std::sscanf(trimmed(line.substr(14)).c_str(), "bytes %" SCNu64 "-%" SCNu64 "/%" SCNu64,
                    &first, &last, &total) == 3) {
      a.body_start = first;
      a.size = total;
    }
  }
  return one * count;
}

size_t on_body(char* data, size_t one, size_t count, void* user) {
  Attempt& a = *static_cast<Attempt*>(user);
  const size_t n = one * count;
  if (!success(a.status)) {
    a.error_body.append(
        data, std::min(n, kErrorBodyLimit - std::min(kErrorBodyLimit, a.error_body.size())));
    return n;
  }
  if (answered_another_version(a)) return 0;  // none of its bytes is the object's
  if (a.sink == nullptr) return n;            // a body that no one asked for (a PUT's, a DELETE's)
  if (a.want_end == kUnknownEnd && a.size) a.want_end = *a.size;
  const uint64_t position = a.body_start + a.body_seen;
  a.body_seen += n;
  const uint64_t begin = std::max(position, a.want_begin);
  const uint64_t end = std::min(position + n, a.want_end);
  if (begin < end) {
    a.sink_status = (*a.sink)(begin, data + (begin - position), end - begin);
    if (!a.sink_status.is_ok()) return 0;  // CURLE_WRITE_ERROR
    if (begin <= a.cursor) a.cursor = std::max(a.cursor, end);
  }
  return n;
}

size_t on_upload(char* buffer, size_t one, size_t count, void* user) {
  BodyUpload& u = *static_cast<BodyUpload*>(user);
  if (u.file != nullptr) {
    const size_t n = std::fread(buffer, 1, one * count, u.file);
    return std::ferror(u.file) ? CURL_READFUNC_ABORT : n;
  }
  const size_t n = std::min(one * count, u.bytes.size() - u.position);
  std::memcpy(buffer, u.bytes.data() + u.position, n);
  u.position += n;
  return n;
}

int on_upload_seek(void* user, curl_off_t offset, int origin) {
  BodyUpload& u = *static_cast<BodyUpload*>(user);
  if (origin != SEEK_SET || offset < 0) return CURL_SEEKFUNC_CANTSEEK;
  if (u.file != nullptr)
    return fseeko(u.file, offset, SEEK_SET) == 0 ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL;
  if (static_cast<uint64_t>(offset) > u.bytes.size()) return CURL_SEEKFUNC_FAIL;
  u.position = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

// A header list whose values (a session token) are wiped when it goes.
class Headers {
 public:
  Headers() = default;
  Headers(const Headers&) = delete;
  Headers& operator=(const Headers&) = delete;
  ~Headers() {
    for (curl_slist* item = list_; item != nullptr; item = item->next) {
      ::explicit_bzero(item->data, std::strlen(item->data));
    }
    curl_slist_free_all(list_);
  }
  void add(const std::string& line) { list_ = curl_slist_append(list_, line.c_str()); }
  curl_slist* get() const { return list_; }

 private:
  curl_slist* list_ = nullptr;
};

enum class Method { kGet, kHead, kPut, kDelete };

// Runs `easy` to its end in 50 ms polls, so that a cancel is seen promptly even on an idle
// connection (libcurl's progress callback may wait a second).
CURLcode perform(CURL* easy, const HttpRequest& request) {
  CURLM* multi = curl_multi_init();
  curl_multi_add_handle(multi, easy);
  CURLcode result = CURLE_OK;
  for (int running = 1; running > 0;) {
    if (cancelled(request)) {
      result = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    if (curl_multi_perform(multi, &running) != CURLM_OK) {
      result = CURLE_OUT_OF_MEMORY;
      break;
    }
    if (running > 0) curl_multi_poll(multi, nullptr, 0, kPollMs, nullptr);
  }
  int queued = 0;
  while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
    if (message->msg == CURLMSG_DONE && result == CURLE_OK) result = message->data.result;
  }
  curl_multi_remove_handle(multi, easy);
  curl_multi_cleanup(multi);
  return result;
}

// The S3 <Code> of an error body, if it is one (letters and digits only).
std::string s3_error_code(const std::string& body) {
  const size_t begin = body.find("<Code>");
  const size_t end = body.find("</Code>");
  if (begin == std::string::npos || end == std::string::npos || end < begin + 6) return "";
  std::string code = body.substr(begin + 6, end - begin - 6);
  if (code.empty() || code.size() > 64 || !std::all_of(code.begin(), code.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c));
      })) {
    return "";
  }
  return code;
}

class Transfer {
 public:
  Transfer(const HttpClientOptions& options, const HttpRequest& request, Method method,
           uint64_t upload_size = 0)
      : options_(options), request_(request), method_(method), upload_size_(upload_size) {}

  // Attempts until success, a final failure, the retry policy's end or a cancel.
  Result<HttpResponse> run(Attempt& state, const std::function<Status()>& rewind) {
    // A total limit bounds the transfer, its retries included: no retry starts after it, and
    // each attempt may take only what is left of it.
    RetryLimits limits = options_.retry;
    const double total = request_.total_timeout_s;
    if (total > 0) limits.budget_s = std::min(limits.budget_s, total);
    const RetryPolicy policy(limits, seconds_now, random_unit);
    const double started = policy.now();
    std::string first_etag;
    // Whether the server answered a Range from past the start with the whole object (200): it
    // ignores Range, so a cut transfer cannot resume; the whole object is taken once, not again.
    bool range_ignored = false;
    for (int attempt = 1;; ++attempt) {
      STOKER_RETURN_IF_ERROR(rewind());
      const CURLcode code =
          attempt_once(state, first_etag, total > 0 ? started + total - policy.now() : 0);
      if (!state.sink_status.is_ok()) return state.sink_status;
      if (success(state.status) && answered_another_version(state))
        return corrupt(fmt::format(
            "{}: the object changed on the server since its ETag was read (it answered ETag {} "
            "to If-Match {})",
            request_.redacted_url, state.etag, state.if_match));
      if (code == CURLE_ABORTED_BY_CALLBACK || cancelled(request_)) {
        return Status(StatusCode::kCancelled, request_.redacted_url + ": cancelled");
      }
      if (first_etag.empty() && success(state.status)) first_etag = state.etag;
      if (state.range_from > 0 && state.status == 200) range_ignored = true;
      if (code == CURLE_OK && success(state.status) && state.size && method_ == Method::kGet &&
          state.want_end != kUnknownEnd && state.want_end > *state.size) {
        return corrupt(fmt::format("{}: bytes [{}, {}) asked of an object of {} bytes",
                                   request_.redacted_url, state.want_begin, state.want_end,
                                   *state.size));
      }
      CURLcode outcome = code;
      // Every byte wanted arrived before the transfer was cut (a stall timer that fired after
      // the last of them, a server sending more than was asked): it is done, and a resume would
      // ask for an empty range.
      if (code != CURLE_OK && success(state.status) && method_ == Method::kGet &&
          state.want_end != kUnknownEnd && state.cursor >= state.want_end) {
        outcome = CURLE_OK;
      }
      if (code == CURLE_OK && success(state.status) && method_ == Method::kGet &&
          state.want_end != kUnknownEnd && state.cursor < state.want_end) {
        outcome = CURLE_PARTIAL_FILE;  // a body shorter than its length said
      }
      if (outcome == CURLE_OK &&
          (success(state.status) || (state.status == 304 && !request_.if_none_match.empty()))) {
        HttpResponse response;
        response.status = state.status;
        response.etag = state.etag.empty() ? first_etag : state.etag;
        response.size = state.size;
        response.attempts = attempt;
        return response;
      }
      const long status = outcome == CURLE_OK ? state.status : 0;
      const std::optional<double> delay =
          range_ignored ? std::nullopt
                        : policy.delay_before_retry(attempt, started, outcome, status);
      if (!delay) return failure(outcome, state, attempt, policy.now() - started, range_ignored);
      for (const double until = policy.now() + *delay; policy.now() < until;) {
        if (cancelled(request_)) {
          return Status(StatusCode::kCancelled, request_.redacted_url + ": cancelled");
        }
        std::this_thread::sleep_for(
            std::chrono::duration<double>(std::min(0.02, std::max(0.0, until - policy.now()))));
      }
    }
  }

 private:
  // One attempt; `time_left_s` > 0 bounds it (0: only a stall does).
  CURLcode attempt_once(Attempt& state, const std::string& first_etag, double time_left_s) {
    state.status = 0;
    state.error_body.clear();
    CURL* easy = curl_easy_init();
    if (easy == nullptr) return CURLE_OUT_OF_MEMORY;
    Headers headers;
    curl_easy_setopt(easy, CURLOPT_SHARE, shared_handle());
    curl_easy_setopt(easy, CURLOPT_URL, request_.url.c_str());
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!ca_bundle().empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, ca_bundle().c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT, options_.connect_timeout_s);
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, options_.low_speed_bytes_per_s);
    curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, options_.low_speed_time_s);
    if (request_.total_timeout_s > 0) {
      curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS,
                       std::max(1L, static_cast<long>(time_left_s * 1000)));
    }
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &state);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &state);
    if (request_.sigv4 != nullptr && !request_.sigv4->anonymous()) {
      const std::string scope = "aws:amz:" + request_.sigv4->region + ":s3";
      curl_easy_setopt(easy, CURLOPT_AWS_SIGV4, scope.c_str());
      curl_easy_setopt(easy, CURLOPT_USERNAME, request_.sigv4->access_key_id.c_str());
      curl_easy_setopt(easy, CURLOPT_PASSWORD, request_.sigv4->secret_access_key.reveal().c_str());
      // libcurl 7.88 signs the body's hash wrongly unless told it (REMOTE-DESIGN.md, section 4).
      headers.add("x-amz-content-sha256: UNSIGNED-PAYLOAD");
      if (!request_.sigv4->session_token.empty()) {
        headers.add("x-amz-security-token: " + request_.sigv4->session_token.reveal());
      }
    } else {
      curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L);
      curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L);
      curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    }
    const std::string if_match = !request_.if_match.empty()        ? request_.if_match
                                 : state.cursor > state.want_begin ? first_etag
                                                                   : "";
    state.if_match = if_match;
    if (!if_match.empty()) headers.add("If-Match: " + if_match);
    if (!request_.if_none_match.empty()) headers.add("If-None-Match: " + request_.if_none_match);
    std::string range;
    state.range_from = 0;
    if (method_ == Method::kGet && (state.cursor > 0 || state.want_end != kUnknownEnd)) {
      state.range_from = state.cursor;
      range = std::to_string(state.cursor) + "-" +
              (state.want_end == kUnknownEnd ? "" : std::to_string(state.want_end - 1));
      curl_easy_setopt(easy, CURLOPT_RANGE, range.c_str());
    }
    if (method_ == Method::kHead) curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
    if (method_ == Method::kDelete) curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, "DELETE");
    if (method_ == Method::kPut) {
      curl_easy_setopt(easy, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(easy, CURLOPT_READFUNCTION, on_upload);
      curl_easy_setopt(easy, CURLOPT_READDATA, state.upload);
      curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, on_upload_seek);
      curl_easy_setopt(easy, CURLOPT_SEEKDATA, state.upload);
      curl_easy_setopt(easy, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(upload_size_));
    }
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers.get());
    const CURLcode code = perform(easy, request_);
    if (state.status == 0) curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &state.status);
    curl_easy_cleanup(easy);
    return code;
  }

  Status failure(CURLcode code, const Attempt& state, int attempts, double seconds,
                 bool range_ignored) const {
    std::string what;
    StatusCode status_code = StatusCode::kIoError;
    if (code != CURLE_OK) {
      what = curl_easy_strerror(code);
    } else {
      what = fmt::format("HTTP {}", state.status);
      const std::string s3_code = s3_error_code(state.error_body);
      if (!s3_code.empty()) what += " (" + s3_code + ")";
      if (state.status == 404 || state.status == 410) status_code = StatusCode::kNotFound;
      if (state.status == 412) {
        status_code = StatusCode::kCorrupt;
        what += ": the object changed on the server since its ETag was read";
      }
    }
    std::string message =
        fmt::format("{}: {} after {} attempt{} over {:.1f} s", request_.redacted_url, what,
                    attempts, attempts == 1 ? "" : "s", seconds);
    if ((state.status == 401 || state.status == 403) && code == CURLE_OK &&
        !request_.denied_hint.empty()) {
      message += "; " + request_.denied_hint;
    }
    if (range_ignored)
      message +=
          "; the server ignores Range (it sent the whole object to a request for bytes past its "
          "start), so a cut transfer is not resumed";
    return Status(status_code, message);
  }

  const HttpClientOptions& options_;
  const HttpRequest& request_;
  Method method_;
  uint64_t upload_size_;
};

}  // namespace

Result<std::shared_ptr<HttpClient>> HttpClient::create(HttpClientOptions options) {
  STOKER_RETURN_IF_ERROR(init_libcurl());
  return std::shared_ptr<HttpClient>(new HttpClient(options));
}

Result<HttpResponse> HttpClient::get(const HttpRequest& request, std::optional<ByteRange> range,
                                     const ByteSink& sink) const {
  Attempt state;
  state.sink = &sink;
  if (range) {
    if (range->length == 0) {
      return invalid_argument(request.redacted_url + ": an empty byte range was asked for");
    }
    state.want_begin = range->offset;
    state.want_end = range->offset + range->length;
  }
  state.cursor = state.want_begin;
  Transfer transfer(options_, request, Method::kGet);
  return transfer.run(state, [] { return Status::ok(); });
}

Result<HttpResponse> HttpClient::head(const HttpRequest& request) const {
  Attempt state;
  Transfer transfer(options_, request, Method::kHead);
  return transfer.run(state, [] { return Status::ok(); });
}

Result<HttpResponse> HttpClient::remove(const HttpRequest& request) const {
  Attempt state;
  Transfer transfer(options_, request, Method::kDelete);
  return transfer.run(state, [] { return Status::ok(); });
}

Result<HttpResponse> HttpClient::put_file(const HttpRequest& request,
                                          const std::string& path) const {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return io_error(path + ": cannot open for upload: " + std::strerror(errno));
  std::unique_ptr<FILE, int (*)(FILE*)> closer(file, std::fclose);
  if (fseeko(file, 0, SEEK_END) != 0) return io_error(path + ": cannot seek");
  BodyUpload upload;
  upload.file = file;
  Attempt state;
  state.upload = &upload;
  Transfer transfer(options_, request, Method::kPut, static_cast<uint64_t>(ftello(file)));
  return transfer.run(state, [&] {
    return fseeko(file, 0, SEEK_SET) == 0 ? Status::ok() : io_error(path + ": cannot seek");
  });
}

Result<HttpResponse> HttpClient::put_bytes(const HttpRequest& request,
                                           std::string_view bytes) const {
  BodyUpload upload;
  upload.bytes = bytes;
  Attempt state;
  state.upload = &upload;
  Transfer transfer(options_, request, Method::kPut, bytes.size());
  return transfer.run(state, [&] {
    upload.position = 0;
    return Status::ok();
  });
}

}  // namespace stoker::remote
