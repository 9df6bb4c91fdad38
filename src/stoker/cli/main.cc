// The `stoker` command line: subcommands from commands.h; errors become one line on stderr.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>

#include "cli/commands.h"
#include "stoker/util/status.h"
#include "util/mapping_registry.h"

namespace {

// Appends the string `s` to `line` at `*used`, as much as fits in `capacity`.
void append(char* line, size_t capacity, size_t* used, const char* s) {
  const size_t n = std::min(std::strlen(s), capacity - *used);
  std::memcpy(line + *used, s, n);
  *used += n;
}

// A file that shrinks while it is mapped (truncated, or rewritten in place, which truncates
// first) makes a read past its new end raise SIGBUS with BUS_ADRERR. If the address lies in a
// registered mapping, this says which file in one line and exits 1 (checkpoints are written to
// temporary names and renamed, so the last one stays intact). Any other SIGBUS gets the default
// action. Async-signal-safe: only lock-free atomics, strlen/memcpy, write, _exit, signal, raise.
void on_sigbus(int number, siginfo_t* info, void*) {
  const char* path = info->si_code == BUS_ADRERR ? stoker::mapped_path_at(info->si_addr) : nullptr;
  if (path == nullptr) {
    ::signal(number, SIG_DFL);
    ::raise(number);  // delivered when this handler returns
    return;
  }
  static std::atomic<bool> reported{false};
  if (reported.exchange(true)) {
    for (;;) ::pause();  // another thread faulted too and is ending the process
  }
  char line[8192];
  size_t used = 0;
  append(line, sizeof(line) - 1, &used, "stoker: ");
  append(line, sizeof(line) - 1, &used, path);
  append(line, sizeof(line) - 1, &used,
         ": the file changed size while it was being read (truncated or overwritten in "
         "place); stopping");
  line[used++] = '\n';
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line, used);
  ::_exit(1);
}

void install_sigbus_handler() {
  struct sigaction action = {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGBUS, &action, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  install_sigbus_handler();
  CLI::App app{"stoker: keeps accelerators fed. Sharded datasets, a fast loader, a trainer."};
  app.require_subcommand(1);
  // A bad command line is one line, as every other error: "stoker: --max-side: Value 0 not in
  // range 1 to 65500 (--help lists the options)".
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "stoker: " + std::string(e.what()) + " (--help lists the options)\n";
  });
  stoker::cli::add_bench_command(app);
  stoker::cli::add_convert_command(app);
  stoker::cli::add_inspect_command(app);
  stoker::cli::add_train_command(app);
  stoker::cli::add_verify_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const stoker::Error& e) {
    std::fprintf(stderr, "stoker: %s\n", e.what());
    return e.status().code() == stoker::StatusCode::kCancelled ? 130 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoker: internal error: %s\n", e.what());
    return 2;
  }
  return 0;
}
