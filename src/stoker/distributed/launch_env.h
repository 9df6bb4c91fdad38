#pragma once
// LaunchEnv: where this process sits in a multi-process run, as its launcher says in the
// environment. torchrun (and any launcher that sets the same variables: RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) first; SLURM's srun (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID, ...) when RANK and WORLD_SIZE are absent; otherwise one process.
// Reading it changes nothing; process_group.h connects the ranks it describes.

#include <cstdint>
#include <functional>
#include <string>

#include "stoker/util/status.h"

namespace stoker {

// Who described the run.
enum class Launcher {
  kNone,      // no launcher variables: a single process
  kTorchrun,  // RANK and WORLD_SIZE (torchrun, or a launcher imitating it)
  kSlurm,     // SLURM_PROCID and SLURM_NTASKS (srun)
};

// "none", "torchrun" or "slurm".
std::string to_string(Launcher launcher);

// The c10d store's port when neither MASTER_PORT nor SLURM_JOB_ID gives one (PyTorch's default).
inline constexpr int kDefaultMasterPort = 29500;

// This process's place in the run. Plain value.
struct LaunchEnv {
  Launcher launcher = Launcher::kNone;
  int rank = 0;        // in [0, world_size)
  int world_size = 1;  // processes in the run, >= 1
  int local_rank = 0;  // among the processes of this host; selects the CUDA device
  int local_world_size = 1;
  std::string master_addr;  // host of the c10d store ("" for a single process)
  int master_port = 0;      // its port, in [1, 65535] (0 for a single process)
  // torchrun's agent hosts the store (TORCHELASTIC_USE_AGENT_STORE=True): every rank connects
  // to it as a client. Otherwise rank 0 serves it.
  bool agent_store = false;
  // TORCHELASTIC_RESTART_COUNT: the store keys of each restart of the workers are kept apart.
  int restart_count = 0;

  // More than one process: the ranks must be connected.
  bool distributed() const { return world_size > 1; }
};

// Looks up an environment variable: its value, or null if it is not set.
using EnvLookup = std::function<const char*(const char* name)>;

// Reads the launch environment through `lookup`. torchrun's variables when RANK or WORLD_SIZE is
// set (LOCAL_RANK defaults to RANK and LOCAL_WORLD_SIZE to WORLD_SIZE: one host); else SLURM's
// when SLURM_PROCID and SLURM_NTASKS are set and SLURM_NTASKS > 1 (the local size from
// SLURM_NTASKS_PER_NODE, else this node's entry of SLURM_STEP_TASKS_PER_NODE or
// SLURM_TASKS_PER_NODE; MASTER_ADDR, else the first host of SLURM_STEP_NODELIST or
// SLURM_JOB_NODELIST; MASTER_PORT, else kDefaultMasterPort + SLURM_JOB_ID mod 1000); else a
// single process. With more than one process MASTER_ADDR and a port are required.
// kInvalidArgument naming the variable and its value for anything missing, malformed or out of
// range (a rank outside the world, a port outside [1, 65535]).
Result<LaunchEnv> read_launch_env(const EnvLookup& lookup);
// read_launch_env of this process's environment (std::getenv).
Result<LaunchEnv> read_launch_env();

// The first host of a SLURM host list: "node[07-09,12],gpu1" -> "node07". "" for an empty list.
std::string first_slurm_host(const std::string& nodelist);

// Entry `node` (0-based) of a SLURM tasks-per-node list, where "2(x3)" repeats 2 three times:
// "2(x3),1" -> 2, 2, 2, 1. -1 if the list is malformed or has no such entry.
int slurm_tasks_on_node(const std::string& tasks_per_node, int node);

}  // namespace stoker
