#include "cli/local_ranks.h"

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "stoker/util/child_group.h"
#include "stoker/util/status.h"

namespace stoker::cli {
namespace {

// The signal to forward to the ranks (0: none yet). Written by the handler: a lock-free atomic
// store is async-signal-safe.
std::atomic<int> forward_signal{0};

void on_signal(int number) { forward_signal.store(number); }

// Installs on_signal for SIGINT and SIGTERM (once: a second signal ends this process, and the
// ranks with it) and restores the previous handlers on destruction.
class ForwardSignals {
 public:
  ForwardSignals() {
    struct sigaction action = {};
    action.sa_handler = on_signal;
    action.sa_flags = SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_int_);
    sigaction(SIGTERM, &action, &previous_term_);
  }
  ~ForwardSignals() {
    sigaction(SIGINT, &previous_int_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

 private:
  struct sigaction previous_int_ = {};
  struct sigaction previous_term_ = {};
};

}  // namespace

std::vector<std::string> without_nproc(const std::vector<std::string>& args) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--nproc") {
      ++i;  // and its value
    } else if (args[i].rfind("--nproc=", 0) != 0) {
      kept.push_back(args[i]);
    }
  }
  return kept;
}

int run_local_ranks(const std::vector<std::string>& args, int nproc,
                    std::chrono::milliseconds grace) {
  c10d::TCPStoreOptions options;
  options.port = 0;  // the kernel's choice: no port to agree on, none taken
  options.isServer = true;
  options.waitWorkers = false;
  std::unique_ptr<c10d::TCPStore> store;
  try {
    store = std::make_unique<c10d::TCPStore>("127.0.0.1", options);
  } catch (const std::exception& e) {
    throw Error(
        io_error(std::string("--nproc: cannot host the c10d store on 127.0.0.1: ") + e.what()));
  }
  const std::string program = std::filesystem::read_symlink("/proc/self/exe").string();
  ForwardSignals forward;
  forward_signal.store(0);
  ChildGroup ranks;
  for (int r = 0; r < nproc; ++r) {
    ChildSpec rank;
    rank.argv = {program};
    rank.argv.insert(rank.argv.end(), args.begin(), args.end());
    rank.env = {"RANK=" + std::to_string(r),
                "WORLD_SIZE=" + std::to_string(nproc),
                "LOCAL_RANK=" + std::to_string(r),
                "LOCAL_WORLD_SIZE=" + std::to_string(nproc),
                "MASTER_ADDR=127.0.0.1",
                "MASTER_PORT=" + std::to_string(store->getPort()),
                "TORCHELASTIC_USE_AGENT_STORE=True",
                "TORCHELASTIC_RESTART_COUNT=0"};
    throw_if_error(ranks.start(rank));
  }
  // No deadline of its own: the ranks' distributed timeout bounds every wait of theirs.
  const ChildOutcome outcome = ranks.wait(std::chrono::hours(24 * 365), grace, &forward_signal);
  if (outcome.first_failure >= 0) return outcome.exit_codes[outcome.first_failure];
  for (int code : outcome.exit_codes)
    if (code != 0) return code;
  return 0;
}

}  // namespace stoker::cli
