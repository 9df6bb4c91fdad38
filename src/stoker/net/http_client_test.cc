#include "stoker/net/http_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "stoker/testing/hostile_http_server.h"
#include "stoker/testing/loopback_server.h"
#include "stoker/testing/temp_dir.h"

namespace stoker::remote {
namespace {

using Clock = std::chrono::steady_clock;

std::string random_bytes(size_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  return bytes;
}

// A sink into a string, written at the offsets given (relative to `base`).
struct StringSink {
  std::string bytes;
  uint64_t base = 0;
  ByteSink sink() {
    return [this](uint64_t offset, const char* data, size_t size) {
      if (offset - base + size > bytes.size()) bytes.resize(offset - base + size);
      bytes.replace(offset - base, size, data, size);
      return Status::ok();
    };
  }
};

HttpClientOptions fast_retries() {
  HttpClientOptions options;
  options.retry = {3, 0.01, 0.02, 30};
  return options;
}

std::shared_ptr<HttpClient> client(HttpClientOptions options = fast_retries()) {
  return HttpClient::create(options).value_or_throw();
}

// A port that refuses connections (bound, then closed) or one that accepts and never answers.
struct Listener {
  int fd = -1;
  int port = 0;
  explicit Listener(bool listen_on) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t size = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
    port = ntohs(address.sin_port);
    if (listen_on) {
      ::listen(fd, 16);
    } else {
      ::close(fd);
      fd = -1;
    }
  }
  ~Listener() {
    if (fd >= 0) ::close(fd);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/x"; }
};

HttpRequest request_for(const std::string& url) {
  HttpRequest request;
  request.url = url;
  request.redacted_url = url;
  return request;
}

void expect_one_line(const Status& status, const std::string& words) {
  EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
  EXPECT_NE(status.message().find(words), std::string::npos) << status.message();
}

// nginx serving a folder, shared by the suite.
class HttpClientTest : public testing::ServerSuite<HttpClientTest> {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    ::mkdir((*dir_ / "root").c_str(), 0755);
    body_ = random_bytes(300 * 1024 + 17, 1);
    std::ofstream(*dir_ / "root/shard.stk", std::ios::binary) << body_;
    server_ = std::make_unique<testing::LoopbackServer>(
        testing::LoopbackServer::nginx(*dir_ / "root", *dir_ / "nginx"));
  }
  static std::string url(const std::string& path) { return server_->url() + path; }
  // The access log's lines for `path`, once it has `count` of them (nginx logs a request after
  // its response is sent: waits up to 5 s).
  static std::vector<std::string> requests_of(const std::string& path, size_t count = 0) {
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(5);
    std::vector<std::string> lines;
    do {
      lines.clear();
      std::ifstream in(*dir_ / "nginx/access.log");
      for (std::string line; std::getline(in, line);) {
        if (line.find(" " + path + " ") != std::string::npos) lines.push_back(line);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(lines.size() < count ? 10 : 0));
    } while (lines.size() < count && Clock::now() < deadline);
    return lines;
  }

  static inline std::string body_;
};

TEST_F(HttpClientTest, WholeGetEqualsTheFileWithItsEtagAndSize) {
  StringSink out;
  Result<HttpResponse> response = client()->get(request_for(url("/shard.stk")), {}, out.sink());
  ASSERT_TRUE(response.is_ok()) << response.status().message();
  EXPECT_EQ(out.bytes, body_);
  EXPECT_EQ(response.value().status, 200);
  EXPECT_EQ(response.value().attempts, 1);
  EXPECT_EQ(response.value().size, body_.size());
  Result<HttpResponse> head = client()->head(request_for(url("/shard.stk")));
  ASSERT_TRUE(head.is_ok()) << head.status().message();
  EXPECT_FALSE(head.value().etag.empty());
  EXPECT_EQ(head.value().etag, response.value().etag);
  EXPECT_EQ(head.value().size, body_.size());
}

// Property: random ranges, the first and last bytes included, equal the file's bytes.
TEST_F(HttpClientTest, RangedGetsEqualTheFilesBytes) {
  std::mt19937 rng(3);
  const auto http = client();
  std::vector<ByteRange> ranges = {{0, 1}, {body_.size() - 1, 1}, {0, body_.size()}};
  for (int i = 0; i < 20; ++i) {
    const uint64_t offset = rng() % body_.size();
    ranges.push_back({offset, 1 + rng() % (body_.size() - offset)});
  }
  for (const ByteRange& range : ranges) {
    StringSink out;
    out.base = range.offset;
    Result<HttpResponse> response = http->get(request_for(url("/shard.stk")), range, out.sink());
    ASSERT_TRUE(response.is_ok()) << response.status().message();
    EXPECT_EQ(response.value().status, 206);
    EXPECT_EQ(out.bytes, body_.substr(range.offset, range.length)) << range.offset;
  }
}

TEST_F(HttpClientTest, BadRangesAreOneLineErrors) {
  StringSink out;
  Result<HttpResponse> empty =
      client()->get(request_for(url("/shard.stk")), ByteRange{5, 0}, out.sink());
  ASSERT_FALSE(empty.is_ok());
  expect_one_line(empty.status(), "empty byte range");
  Result<HttpResponse> past =
      client()->get(request_for(url("/shard.stk")), ByteRange{body_.size() - 10, 20}, out.sink());
  ASSERT_FALSE(past.is_ok());
  EXPECT_EQ(past.status().code(), StatusCode::kCorrupt);
  expect_one_line(past.status(), "asked of an object of " + std::to_string(body_.size()));
  Result<HttpResponse> beyond =
      client()->get(request_for(url("/shard.stk")), ByteRange{body_.size() + 10, 20}, out.sink());
  ASSERT_FALSE(beyond.is_ok());
  expect_one_line(beyond.status(), "HTTP 416 after 1 attempt");
}

TEST_F(HttpClientTest, NotFoundIsOneLineNamingTheUrlAndNotRetried) {
  StringSink out;
  const size_t before = requests_of("/missing.stk").size();
  Result<HttpResponse> response = client()->get(request_for(url("/missing.stk")), {}, out.sink());
  ASSERT_FALSE(response.is_ok());
  EXPECT_EQ(response.status().code(), StatusCode::kNotFound);
  expect_one_line(response.status(), url("/missing.stk") + ": HTTP 404 after 1 attempt over");
  EXPECT_EQ(requests_of("/missing.stk", before + 1).size(), before + 1);
}

TEST_F(HttpClientTest, ServiceUnavailableIsRetriedUntilTheAttemptsAreSpent) {
  StringSink out;
  const size_t before = requests_of("/_status/503").size();
  Result<HttpResponse> response = client()->get(request_for(url("/_status/503")), {}, out.sink());
  ASSERT_FALSE(response.is_ok());
  EXPECT_EQ(response.status().code(), StatusCode::kIoError);
  expect_one_line(response.status(), url("/_status/503") + ": HTTP 503 after 3 attempts over");
  EXPECT_EQ(requests_of("/_status/503", before + 3).size(), before + 3);
}

TEST_F(HttpClientTest, RefusedConnectionsAreRetried) {
  const Listener closed(false);
  StringSink out;
  Result<HttpResponse> response = client()->get(request_for(closed.url()), {}, out.sink());
  ASSERT_FALSE(response.is_ok());
  expect_one_line(response.status(),
                  closed.url() + ": Couldn't connect to server after 3 attempts");
}

// nginx sends /_slow/ at 100 KB/s; a client that calls anything under 200 KB/s for a second a
// stall cuts each attempt short, and each retry resumes where the last one stopped, with the
// ETag of the first response.
TEST_F(HttpClientTest, CutBodiesResumeWithRangeAndIfMatch) {
  HttpClientOptions options;
  options.low_speed_bytes_per_s = 200 * 1000;
  options.low_speed_time_s = 1;
  options.retry = {10, 0.01, 0.02, 60};
  StringSink out;
  Result<HttpResponse> response =
      client(options)->get(request_for(url("/_slow/shard.stk")), {}, out.sink());
  ASSERT_TRUE(response.is_ok()) << response.status().message();
  EXPECT_EQ(out.bytes, body_);
  EXPECT_GE(response.value().attempts, 2);
  const std::vector<std::string> log = requests_of("/_slow/shard.stk", response.value().attempts);
  ASSERT_EQ(log.size(), static_cast<size_t>(response.value().attempts));
  EXPECT_NE(log[0].find(" 200 range= if_match="), std::string::npos) << log[0];
  for (size_t i = 1; i < log.size(); ++i) {
    EXPECT_NE(log[i].find(" 206 range=bytes="), std::string::npos) << log[i];
    EXPECT_NE(log[i].find("if_match=" + response.value().etag), std::string::npos) << log[i];
  }
}

TEST_F(HttpClientTest, AnEtagThatNoLongerMatchesIsAChangeNotARetry) {
  StringSink out;
  HttpRequest request = request_for(url("/shard.stk"));
  request.if_match = "\"not-the-etag\"";
  Result<HttpResponse> response = client()->get(request, {}, out.sink());
  ASSERT_FALSE(response.is_ok());
  EXPECT_EQ(response.status().code(), StatusCode::kCorrupt);
  expect_one_line(response.status(), "HTTP 412: the object changed on the server");
  EXPECT_TRUE(out.bytes.empty());
}

// A server that ignores If-Match (it answers a replaced object's bytes with its new ETag): the
// ETag it answers with is checked, so that no byte of another version reaches the sink.
TEST(HttpClient, AnEtagOtherThanIfMatchsIsAChangeEvenWhereTheServerIgnoresIt) {
  testing::HostileHttpServer server([](const testing::HostileRequest&) {
    return testing::HostileResponse{
        testing::http_response("200 OK", "ETag: \"new\"\r\n", "the new bytes")};
  });
  for (const std::string sent : {"\"old\"", "W/\"old\""}) {
    StringSink out;
    HttpRequest request = request_for(server.url() + "/x");
    request.if_match = sent;
    Result<HttpResponse> response = client()->get(request, {}, out.sink());
    ASSERT_FALSE(response.is_ok()) << sent;
    EXPECT_EQ(response.status().code(), StatusCode::kCorrupt);
    expect_one_line(response.status(),
                    server.url() +
                        "/x: the object changed on the server since its ETag was "
                        "read (it answered ETag \"new\" to If-Match " +
                        sent + ")");
    EXPECT_TRUE(out.bytes.empty()) << out.bytes;
  }
  // The same ETag, or one that differs only by being weak or unquoted, is the object's.
  for (const std::string sent : {"\"new\"", "W/\"new\"", "new"}) {
    StringSink out;
    HttpRequest request = request_for(server.url() + "/x");
    request.if_match = sent;
    Result<HttpResponse> response = client()->get(request, {}, out.sink());
    ASSERT_TRUE(response.is_ok()) << sent << ": " << response.status().message();
    EXPECT_EQ(out.bytes, "the new bytes");
  }
}

TEST_F(HttpClientTest, AnUnchangedEtagAnswers304WithoutABody) {
  const std::string etag = client()->head(request_for(url("/shard.stk"))).value_or_throw().etag;
  StringSink out;
  HttpRequest request = request_for(url("/shard.stk"));
  request.if_none_match = etag;
  Result<HttpResponse> response = client()->get(request, {}, out.sink());
  ASSERT_TRUE(response.is_ok()) << response.status().message();
  EXPECT_EQ(response.value().status, 304);
  EXPECT_TRUE(out.bytes.empty());
}

TEST_F(HttpClientTest, ASinkErrorEndsTheTransferAsIs) {
  const ByteSink full = [](uint64_t, const char*, size_t) {
    return io_error("/cache/x.part: No space left on device");
  };
  Result<HttpResponse> response = client()->get(request_for(url("/shard.stk")), {}, full);
  ASSERT_FALSE(response.is_ok());
  EXPECT_EQ(response.status().message(), "/cache/x.part: No space left on device");
}

// Threads share one client (and the process's connections): every body arrives whole. The
// single-thread run is the deterministic variant.
void concurrent_gets(const std::shared_ptr<HttpClient>& http, const std::string& url,
                     const std::string& body, int threads) {
  std::vector<std::string> got(threads * 4);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = t; i < static_cast<int>(got.size()); i += threads) {
        StringSink out;
        if (http->get(request_for(url), {}, out.sink()).is_ok()) got[i] = out.bytes;
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const std::string& bytes : got) EXPECT_TRUE(bytes == body);
}

TEST_F(HttpClientTest, ThreadsShareOneClient) {
  concurrent_gets(client(), url("/shard.stk"), body_, 4);
}

TEST_F(HttpClientTest, OneThreadGetsTheSameBodies) {
  concurrent_gets(client(), url("/shard.stk"), body_, 1);
}

TEST(HttpClient, ACancelEndsAnIdleTransfer) {
  const Listener silent(true);  // accepts, never answers
  std::atomic<bool> cancel{false};
  HttpRequest request = request_for(silent.url());
  request.cancelled = [&] { return cancel.load(); };
  Clock::time_point cancelled_at;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancelled_at = Clock::now();
    cancel = true;
  });
  StringSink out;
  Result<HttpResponse> response = client()->get(request, {}, out.sink());
  const Clock::time_point returned = Clock::now();
  canceller.join();
  ASSERT_FALSE(response.is_ok());
  EXPECT_EQ(response.status().code(), StatusCode::kCancelled);
  expect_one_line(response.status(), silent.url() + ": cancelled");
  // Ended by the cancel, not by the 30 s stall that ends an idle transfer otherwise (the bound
  // holds under any load; how prompt it is, within 50 ms, is the poll's: http_client.cc).
  EXPECT_LT(returned - cancelled_at, std::chrono::seconds(20));
}

TEST(HttpClient, ACancelBeforeTheStartSendsNothing) {
  const Listener silent(true);
  std::atomic<bool> cancel{true};
  HttpRequest request = request_for(silent.url());
  request.cancelled = [&] { return cancel.load(); };
  StringSink out;
  Result<HttpResponse> response = client()->get(request, {}, out.sink());
  ASSERT_FALSE(response.is_ok());
  EXPECT_EQ(response.status().code(), StatusCode::kCancelled);
}

// An ETag with a bare CR (or any control byte) is no ETag: it is never sent back in If-Match
// or If-None-Match, where it would start a header of the server's choosing.
TEST(HttpClient, AnEtagWithControlBytesIsDropped) {
  for (const auto& [etag, kept] :
       std::vector<std::pair<std::string, bool>>{{"\"abc\"", true},
                                                 {"W/\"abc\"", true},
                                                 {"\"abc\rX-Injected: 1\"", false},
                                                 {"\"a\x01b\"", false},
                                                 {"\"" + std::string(2000, 'e') + "\"", false}}) {
    testing::HostileHttpServer server([&etag = etag](const testing::HostileRequest&) {
      return testing::HostileResponse{
          testing::http_response("200 OK", "ETag: " + etag + "\r\n", "body")};
    });
    StringSink out;
    Result<HttpResponse> response = client()->get(request_for(server.url() + "/x"), {}, out.sink());
    ASSERT_TRUE(response.is_ok()) << response.status().message();
    EXPECT_EQ(out.bytes, "body");
    EXPECT_EQ(response.value().etag, kept ? etag : "") << etag.size();
  }
}

// A server that ignores Range: the first answer is cut, the resumed request (Range from the
// bytes received) gets a 200 with the whole object. `whole_from` is the answer from which the
// body is sent whole (0: never). Past 10 answers it answers 404, which ends any client.
testing::HostileHttpServer::Handler range_ignoring_server(const std::string& body,
                                                          std::atomic<int>& answers,
                                                          int whole_from) {
  return [&body, &answers, whole_from](const testing::HostileRequest&) {
    const int answer = ++answers;
    if (answer > 10)
      return testing::HostileResponse{testing::http_response("404 Not Found", "", "")};
    std::string response = testing::http_response("200 OK", "ETag: \"v1\"\r\n", body);
    if (whole_from == 0 || answer < whole_from) response.resize(response.size() - body.size() / 2);
    return testing::HostileResponse{response};
  };
}

// Retried without an attempt limit (STOKER_RETRY_SECONDS), a cut transfer that the server
// answers with the whole object again is taken from its start once, not restarted for ever
// (issue 66, H4): the next cut ends it, one line saying why.
TEST(HttpClient, AServerIgnoringRangeIsNotRestartedForEver) {
  const std::string body = random_bytes(64 * 1024, 3);
  std::atomic<int> answers{0};
  testing::HostileHttpServer server(range_ignoring_server(body, answers, 0));
  HttpClientOptions options;
  options.retry = {INT_MAX, 0.001, 0.002, 60};
  StringSink out;
  Result<HttpResponse> response =
      client(options)->get(request_for(server.url() + "/x"), {}, out.sink());
  ASSERT_FALSE(response.is_ok());
  expect_one_line(response.status(), server.url() + "/x: ");
  expect_one_line(response.status(), "after 2 attempts");
  expect_one_line(response.status(), "the server ignores Range");
  const std::vector<std::string> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
}

// The whole object sent again in answer to the resumed request is taken, from its start.
TEST(HttpClient, AServerIgnoringRangeGivesTheWholeObjectOnceMore) {
  const std::string body = random_bytes(64 * 1024, 4);
  std::atomic<int> answers{0};
  testing::HostileHttpServer server(range_ignoring_server(body, answers, 2));
  StringSink out;
  Result<HttpResponse> response = client()->get(request_for(server.url() + "/x"), {}, out.sink());
  ASSERT_TRUE(response.is_ok()) << response.status().message();
  EXPECT_EQ(response.value().attempts, 2);
  EXPECT_TRUE(out.bytes == body);
}

// A transfer cut after every byte asked for arrived is done: it is not resumed with an empty
// range (which a server answers 416). Here the server sends the whole object to a request for
// its first bytes and is cut half-way, past them.
TEST(HttpClient, ACutAfterEveryWantedByteIsDone) {
  const std::string body = random_bytes(64 * 1024, 5);
  std::atomic<int> answers{0};
  testing::HostileHttpServer server(range_ignoring_server(body, answers, 0));
  StringSink out;
  Result<HttpResponse> response =
      client()->get(request_for(server.url() + "/x"), ByteRange{0, 100}, out.sink());
  ASSERT_TRUE(response.is_ok()) << response.status().message();
  EXPECT_EQ(response.value().attempts, 1);
  EXPECT_EQ(out.bytes, body.substr(0, 100));
  EXPECT_EQ(server.requests().size(), 1u);
}

// A total limit bounds the transfer, retries included (REMOTE-DESIGN.md: 60 s for manifests
// and HEADs): a server that accepts and never answers, retried with a long budget and no
// stall detection in sight, ends at the limit, not after 10 attempts of it.
TEST(HttpClient, ATotalLimitBoundsEveryAttemptTogether) {
  const Listener silent(true);
  HttpClientOptions options;
  options.retry = {10, 0.01, 0.02, 120};
  options.low_speed_time_s = 600;
  HttpRequest request = request_for(silent.url());
  request.total_timeout_s = 0.5;
  StringSink out;
  const Clock::time_point started = Clock::now();
  Result<HttpResponse> response = client(options)->get(request, {}, out.sink());
  const Clock::duration took = Clock::now() - started;
  ASSERT_FALSE(response.is_ok());
  expect_one_line(response.status(), silent.url() + ": Timeout was reached after ");
  EXPECT_GE(took, std::chrono::milliseconds(450));
  EXPECT_LT(took, std::chrono::seconds(60))  // an attempt's stall would take 600 s
      << "the limit is the transfer's, not an attempt's";
}

}  // namespace
}  // namespace stoker::remote
