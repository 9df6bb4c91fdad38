// The `stoker` command line: subcommands from commands.h. Every error becomes one line on stderr
// starting "stoker: ", with the exit codes of cli/usage.h: 2 for a command line that means
// nothing (nothing was done), 1 for a command that failed, 130 when interrupted.
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <signal.h>
#include <torch/version.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/usage.h"
#include "stoker/store/manifest.h"
#include "stoker/train/checkpoint.h"
#include "stoker/util/mapped_read_guard.h"
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

// SIGINT and SIGTERM until a command installs its own handling (train's stop with a checkpoint,
// convert's cleanup): quit at once, in one line, exit 130, as the default action would; also
// where stoker started with them ignored (a script's background job), so that an interrupt ends
// a wait on the network (a stalled download) as it ends any other. Async-signal-safe.
void on_interrupt(int) {
  static constexpr char kLine[] = "stoker: interrupted\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, kLine, sizeof(kLine) - 1);
  ::_exit(stoker::cli::kExitInterrupted);
}

void install_interrupt_handlers() {
  struct sigaction action = {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// `stoker --version`: what a bug report needs to name.
std::string version_text() {
  return fmt::format("stoker {} (LibTorch {}, dataset format {}, checkpoint format {})",
                     STOKER_VERSION, TORCH_VERSION, stoker::kDatasetFormatVersion,
                     stoker::kCheckpointFormatVersion);
}

// The first line of `text`: LibTorch's messages go on with a C++ backtrace.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::vector<std::string> arguments;  // main()'s, for command_arguments()

int fail(const std::string& message, int code) {
  std::fprintf(stderr, "stoker: %s\n", message.c_str());
  return code;
}

}  // namespace

const std::vector<std::string>& stoker::cli::command_arguments() { return arguments; }

int main(int argc, char** argv) {
  using namespace stoker::cli;
  install_sigbus_handler();
  install_interrupt_handlers();
  // Installed after (chained to) the handler above: a shard truncated under the loader fails its
  // batch with the usual one-line error naming shard and record; the handler above remains for
  // faults outside guarded reads (mapped_read_guard.h).
  stoker::install_mapped_read_fault_handler();
  arguments.assign(argv + 1, argv + argc);
  CLI::App app{"stoker: keeps accelerators fed. Sharded datasets, a fast loader, a trainer.",
               "stoker"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text());
  // An option given twice takes its last value, as in most command lines (`... --epochs 2` after
  // a saved command); set before the subcommands, which inherit it.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  add_bench_command(app);
  add_convert_command(app);
  add_doctor_command(app);
  add_env_command(app);
  add_inspect_command(app);
  add_ops_command(app);
  add_push_command(app);
  add_train_command(app);
  add_verify_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    return fail(parse_error_message(app, e), kExitUsage);
  } catch (const UsageError& e) {
    return fail(e.what(), kExitUsage);
  } catch (const ExitCode& e) {
    return e.code();
  } catch (const stoker::Error& e) {
    return fail(e.what(), e.status().code() == stoker::StatusCode::kCancelled ? kExitInterrupted
                                                                              : kExitFailure);
  } catch (const c10::Error& e) {
    return fail("internal error: " + first_line(e.what_without_backtrace()), kExitFailure);
  } catch (const std::bad_alloc&) {
    return fail("out of memory", kExitFailure);
  } catch (const std::exception& e) {
    return fail("internal error: " + first_line(e.what()), kExitFailure);
  }
  return kExitOk;
}
