#pragma once
// LoopbackServer: a real server on 127.0.0.1 for a test, nginx serving a folder or SeaweedFS's
// S3 gateway, started by python/tests/servers.py (the one implementation the pytest suite uses
// too) run as a program by STOKER_PYTHON. The program prints one JSON line (the address, and
// for S3 its bucket, region and keys, or why the server is missing) and stops the server when
// its stdin closes: on destruction here, or when the test process dies.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "stoker/testing/build_paths.h"
#include "stoker/testing/temp_dir.h"

extern char** environ;

namespace stoker::testing {

class LoopbackServer {
 public:
  // nginx serving `root`; its config and logs in `work`.
  static LoopbackServer nginx(const std::string& root, const std::string& work) {
    return LoopbackServer({"nginx", root, work});
  }
  // weed's S3 gateway with one bucket; its data and logs in `work`.
  static LoopbackServer s3(const std::string& work) { return LoopbackServer({"s3", work}); }

  LoopbackServer(LoopbackServer&& other) noexcept
      : info_(std::move(other.info_)), pid_(other.pid_), stdin_(other.stdin_) {
    other.pid_ = 0;
    other.stdin_ = -1;
  }
  LoopbackServer& operator=(LoopbackServer&&) = delete;
  ~LoopbackServer() {
    if (stdin_ >= 0) ::close(stdin_);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }

  // Empty when the server runs; else why not, naming the package to install (a test skips).
  std::string skip_reason() const { return info_.value("skip", std::string()); }
  // "http://127.0.0.1:PORT".
  std::string url() const { return info_.value("url", std::string()); }
  // For s3: "bucket", "region", "access_key", "secret_key".
  std::string get(const std::string& key) const { return info_.value(key, std::string()); }

 private:
  explicit LoopbackServer(std::vector<std::string> args) {
    std::vector<std::string> argv_strings = {
        STOKER_PYTHON, std::string(testing::kSourceDir) + "/python/tests/servers.py"};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
      throw std::runtime_error("servers.py: pipe failed");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    const int error = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    if (error != 0) {
      ::close(out[0]);
      pid_ = 0;
      throw std::runtime_error("cannot start " + argv_strings[0]);
    }
    std::string line;
    char c;
    while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(out[0]);
    info_ = nlohmann::json::parse(line, nullptr, false);
    if (!info_.is_object()) {
      ::close(stdin_);
      ::waitpid(pid_, nullptr, 0);
      throw std::runtime_error("servers.py " + args[0] + " did not start: '" + line + "'");
    }
  }

  nlohmann::json info_;
  pid_t pid_ = 0;
  int stdin_ = -1;
};

// A suite sharing one server (it takes seconds to start): the suite's SetUpTestSuite fills
// dir_ and starts server_; both go at the suite's end, and every test skips, naming the package,
// when the server cannot run. `Suite` is the derived suite, so that each has its own server.
template <typename Suite>
class ServerSuite : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    server_.reset();
    dir_.reset();
  }
  void SetUp() override {
    if (!server_->skip_reason().empty()) GTEST_SKIP() << server_->skip_reason();
  }
  // The folder nginx serves (start_nginx), and the URL of `path` there.
  static std::string root() { return *dir_ / "root"; }
  static std::string url(const std::string& path) { return server_->url() + "/" + path; }
  // Starts nginx serving root(), its log and state in dir_/nginx.
  static void start_nginx() {
    server_ = std::make_unique<LoopbackServer>(LoopbackServer::nginx(root(), *dir_ / "nginx"));
  }

  static inline std::unique_ptr<TempDir> dir_;
  static inline std::unique_ptr<LoopbackServer> server_;
};

}  // namespace stoker::testing
