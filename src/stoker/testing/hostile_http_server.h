#pragma once
// HostileHttpServer: an HTTP/1.1 server on loopback that answers each request with the raw bytes
// a test's function returns (status line, headers and body as written: a bare CR in a header, a
// 206 with any Content-Range, a listing that ignores its delimiter), optionally sent slowly, so
// that the remote tests can play a server that misbehaves. One request per connection
// (`Connection: close`); a thread per connection, joined by the destructor (which closes every
// connection, ending a trickle). For tests only; thread-safe.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace stoker::testing {

// The request as received: its first line ("GET /path?query HTTP/1.1") and its headers.
struct HostileRequest {
  std::string line;
  std::string head;  // the whole head (without the body), for tests that look at a header
};

// What to send: `bytes` (the whole response as written), `chunk` bytes every `pause` (0: all
// at once).
struct HostileResponse {
  std::string bytes;
  size_t chunk = 0;
  std::chrono::milliseconds pause{0};
};

class HostileHttpServer {
 public:
  using Handler = std::function<HostileResponse(const HostileRequest&)>;

  explicit HostileHttpServer(Handler handler) : handler_(std::move(handler)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t size = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
    ::listen(fd_, 64);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  HostileHttpServer(const HostileHttpServer&) = delete;
  HostileHttpServer& operator=(const HostileHttpServer&) = delete;
  ~HostileHttpServer() {
    stopping_ = true;
    acceptor_.join();
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const int fd : open_) ::shutdown(fd, SHUT_RDWR);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
    ::close(fd_);
  }

  // "http://127.0.0.1:PORT".
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The requests' first lines so far, in the order they came.
  std::vector<std::string> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return lines_;
  }
  // The responses whose client went away before they were sent whole (a send failed).
  int abandoned() const { return abandoned_; }

 private:
  void accept_loop() {
    while (!stopping_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      open_.push_back(client);
      threads_.emplace_back([this, client] { serve(client); });
    }
  }

  void serve(int client) {
    std::string head;
    char buffer[4096];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < (1 << 20)) {
      const ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      head.append(buffer, static_cast<size_t>(n));
    }
    // The body too (an upload's), so that closing after the response resets nothing.
    const size_t length_at = head.find("Content-Length: ");
    const size_t head_end = head.find("\r\n\r\n");
    if (length_at != std::string::npos && head_end != std::string::npos) {
      const size_t want = std::stoul(head.substr(length_at + 16)) + head_end + 4;
      while (head.size() < want) {
        const ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        head.append(buffer, static_cast<size_t>(n));
      }
    }
    HostileRequest request{head.substr(0, head.find("\r\n")), head.substr(0, head_end)};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back(request.line);
    }
    const HostileResponse response = handler_(request);
    const size_t chunk = response.chunk == 0 ? response.bytes.size() : response.chunk;
    for (size_t at = 0; at < response.bytes.size() && !stopping_; at += chunk) {
      const std::string_view part = std::string_view(response.bytes).substr(at, chunk);
      if (::send(client, part.data(), part.size(), MSG_NOSIGNAL) < 0) {
        ++abandoned_;
        break;
      }
      if (at + chunk < response.bytes.size()) std::this_thread::sleep_for(response.pause);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ::shutdown(client, SHUT_RDWR);
    ::close(client);
    open_.erase(std::remove(open_.begin(), open_.end(), client), open_.end());
  }

  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> abandoned_{0};
  std::thread acceptor_;
  mutable std::mutex mutex_;
  std::vector<int> open_;
  std::vector<std::thread> threads_;
  std::vector<std::string> lines_;
};

// A response of `status` ("200 OK") with `headers` (each line ending "\r\n") and `body`, its
// Content-Length given.
inline std::string http_response(const std::string& status, const std::string& headers,
                                 const std::string& body) {
  return "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n" + headers + "\r\n" + body;
}

}  // namespace stoker::testing
