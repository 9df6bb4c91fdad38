#include "stoker/util/child_group.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace stoker {
namespace {

using Clock = std::chrono::steady_clock;

// This process's environment with `extra` ("NAME=value") set on top.
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& x : extra) replaced = replaced || x.substr(0, x.find('=')) == name;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// Exit code of a child whose exec failed (as a shell's "command not found").
constexpr int kExecFailed = 127;

}  // namespace

ChildGroup::~ChildGroup() { kill_running(); }

Status ChildGroup::start(const ChildSpec& spec) {
  if (spec.argv.empty()) return invalid_argument("ChildGroup::start: no program given");
  std::vector<std::string> args = spec.argv;
  std::vector<std::string> env = merged_environment(spec.env);
  std::vector<char*> c_args = pointers(args);
  std::vector<char*> c_env = pointers(env);
  int out = -1;
  if (!spec.output_path.empty()) {
    out = ::open(spec.output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) return io_error("cannot write " + spec.output_path + ": " + std::strerror(errno));
  }
  // The exec's error travels back through a close-on-exec pipe: EOF means it succeeded.
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    if (out >= 0) ::close(out);
    return io_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t group = group_;
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec (this process may have had other threads).
    ::setpgid(0, group);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kExecFailed);  // the parent is already gone
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::execvpe(c_args[0], c_args.data(), c_env.data());
    const int error = errno;
    [[maybe_unused]] const ssize_t n = ::write(report[1], &error, sizeof error);
    ::_exit(kExecFailed);
  }
  if (out >= 0) ::close(out);
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    return io_error(std::string("cannot start a process: ") + std::strerror(errno));
  }
  if (group_ == 0) group_ = pid;
  ::setpgid(pid, group_);  // also here: whichever of parent and child runs first
  children_.push_back(Child{pid, true, 0, {}});
  int error = 0;
  ssize_t n;
  while ((n = ::read(report[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof error)) {
    reap(children_.back(), /*block=*/true);
    return not_found("cannot run " + spec.argv[0] + ": " + std::strerror(error));
  }
  return Status::ok();
}

void ChildGroup::reap(Child& c, bool block) {
  if (!c.running) return;
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(c.pid, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r != c.pid) return;
  c.running = false;
  c.ended = Clock::now();
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void ChildGroup::kill_running() {
  for (Child& c : children_) {
    if (!c.running) continue;
    ::kill(c.pid, SIGKILL);
    reap(c, /*block=*/true);
  }
}

ChildOutcome ChildGroup::wait(std::chrono::milliseconds timeout, std::chrono::milliseconds grace,
                              const std::atomic<int>* forward) {
  constexpr std::chrono::milliseconds kPoll(10);
  ChildOutcome outcome;
  const Clock::time_point start = Clock::now();
  Clock::time_point deadline = start + timeout;
  bool forwarded = false;
  for (;;) {
    bool running = false;
    for (size_t i = 0; i < children_.size(); ++i) {
      Child& c = children_[i];
      reap(c, /*block=*/false);
      running = running || c.running;
      if (!c.running && c.exit_code != 0 && outcome.first_failure < 0) {
        outcome.first_failure = static_cast<int>(i);
        deadline = std::min(deadline, Clock::now() + grace);
      }
    }
    if (!running) break;
    if (forward && !forwarded && forward->load() != 0) {
      forwarded = true;
      for (const Child& c : children_)
        if (c.running) ::kill(c.pid, forward->load());
    }
    if (Clock::now() >= deadline) {
      outcome.timed_out = true;
      kill_running();
      break;
    }
    std::this_thread::sleep_for(kPoll);
  }
  for (const Child& c : children_) {
    outcome.exit_codes.push_back(c.exit_code);
    outcome.exit_seconds.push_back(
        std::max(0.0, std::chrono::duration<double>(c.ended - start).count()));
  }
  return outcome;
}

}  // namespace stoker
