#pragma once
// `stoker train --nproc N`: one command becomes N ranks on this host, still over c10d. This
// process plays torchrun's agent: it hosts the c10d store, starts the ranks with torchrun's
// variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_USE_AGENT_STORE=True), forwards SIGINT/SIGTERM to them and waits.

#include <chrono>
#include <string>
#include <vector>

namespace stoker::cli {

// `args` without its --nproc option ("--nproc N" or "--nproc=N").
std::vector<std::string> without_nproc(const std::vector<std::string>& args);

// Runs this program with `args` (argv[1...]) as `nproc` local ranks and waits for them: 0 if
// every rank succeeded, else the exit code of the first rank that failed. Once one has failed
// the others get `grace` to end on their own (they notice within the distributed timeout),
// then are killed. Throws Error if the store cannot be hosted or a rank cannot be started.
// Installs signal handlers for its duration (the CLI's process-wide state).
int run_local_ranks(const std::vector<std::string>& args, int nproc,
                    std::chrono::milliseconds grace);

}  // namespace stoker::cli
