#include "stoker/distributed/launch_env.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <limits>
#include <optional>

#include "stoker/util/enum_names.h"

namespace stoker {
namespace {

// Variables of one launcher, read with their names kept for messages.
class Variables {
 public:
  explicit Variables(const EnvLookup& lookup) : lookup_(lookup) {}

  bool has(const char* name) const { return lookup_(name) != nullptr; }
  std::string text(const char* name) const {
    const char* value = lookup_(name);
    return value ? value : "";
  }
  // The whole number `name` holds, in [low, high]; `fallback` if it is not set.
  Result<int> number(const char* name, int low, int high, std::optional<int> fallback) const {
    const char* value = lookup_(name);
    if (value == nullptr) {
      if (fallback) return *fallback;
      return invalid_argument(fmt::format("{} is not set (the launcher sets it)", name));
    }
    const std::string s = value;
    int n = 0;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (s.empty() || error != std::errc() || end != s.data() + s.size())
      return invalid_argument(fmt::format("{}='{}' is not a whole number", name, s));
    if (n < low || n > high)
      return invalid_argument(fmt::format("{}={} is outside [{}, {}]", name, n, low, high));
    return n;
  }

 private:
  const EnvLookup& lookup_;
};

constexpr int kMaxWorld = 1 << 20;

// MASTER_ADDR (else `default_addr`) and MASTER_PORT (else `default_port`), required once there
// is more than one process.
Status read_master(const Variables& vars, const std::string& default_addr,
                   std::optional<int> default_port, LaunchEnv& env) {
  env.master_addr = vars.has("MASTER_ADDR") ? vars.text("MASTER_ADDR") : default_addr;
  if (env.master_addr.empty())
    return invalid_argument("MASTER_ADDR is not set: the host of rank 0 (the c10d store)");
  Result<int> port = vars.number("MASTER_PORT", 1, 65535, default_port);
  if (!port.is_ok()) return port.status();
  env.master_port = port.value();
  return Status::ok();
}

// Checks rank against world size and local rank against local world size.
Status check_ranks(const LaunchEnv& env, const char* rank, const char* local_rank) {
  if (env.rank >= env.world_size)
    return invalid_argument(
        fmt::format("{}={} is not a rank of a world of {}", rank, env.rank, env.world_size));
  if (env.local_rank >= env.local_world_size)
    return invalid_argument(fmt::format("{}={} is not a rank of the {} processes of this host",
                                        local_rank, env.local_rank, env.local_world_size));
  return Status::ok();
}

Result<LaunchEnv> read_torchrun(const Variables& vars) {
  LaunchEnv env;
  env.launcher = Launcher::kTorchrun;
  Result<int> world = vars.number("WORLD_SIZE", 1, kMaxWorld, std::nullopt);
  if (!world.is_ok()) return world.status();
  env.world_size = world.value();
  Result<int> rank = vars.number("RANK", 0, kMaxWorld, std::nullopt);
  if (!rank.is_ok()) return rank.status();
  env.rank = rank.value();
  Result<int> local_world = vars.number("LOCAL_WORLD_SIZE", 1, kMaxWorld, env.world_size);
  if (!local_world.is_ok()) return local_world.status();
  env.local_world_size = local_world.value();
  Result<int> local_rank = vars.number("LOCAL_RANK", 0, kMaxWorld, env.rank);
  if (!local_rank.is_ok()) return local_rank.status();
  env.local_rank = local_rank.value();
  if (Status s = check_ranks(env, "RANK", "LOCAL_RANK"); !s.is_ok()) return s;
  env.agent_store = vars.text("TORCHELASTIC_USE_AGENT_STORE") == "True";
  Result<int> restarts = vars.number("TORCHELASTIC_RESTART_COUNT", 0, 1 << 30, 0);
  if (!restarts.is_ok()) return restarts.status();
  env.restart_count = restarts.value();
  if (env.distributed()) {
    if (Status s = read_master(vars, "", std::nullopt, env); !s.is_ok()) return s;
  }
  return env;
}

Result<LaunchEnv> read_slurm(const Variables& vars, int world_size) {
  LaunchEnv env;
  env.launcher = Launcher::kSlurm;
  env.world_size = world_size;
  Result<int> rank = vars.number("SLURM_PROCID", 0, kMaxWorld, std::nullopt);
  if (!rank.is_ok()) return rank.status();
  env.rank = rank.value();
  Result<int> local_rank = vars.number("SLURM_LOCALID", 0, kMaxWorld, 0);
  if (!local_rank.is_ok()) return local_rank.status();
  env.local_rank = local_rank.value();
  if (vars.has("SLURM_NTASKS_PER_NODE")) {
    Result<int> local_world = vars.number("SLURM_NTASKS_PER_NODE", 1, kMaxWorld, std::nullopt);
    if (!local_world.is_ok()) return local_world.status();
    env.local_world_size = local_world.value();
  } else {
    const char* list_name = vars.has("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE"
                                                                  : "SLURM_TASKS_PER_NODE";
    Result<int> node = vars.number("SLURM_NODEID", 0, kMaxWorld, 0);
    if (!node.is_ok()) return node.status();
    const std::string list = vars.text(list_name);
    const int local = list.empty() ? 1 : slurm_tasks_on_node(list, node.value());
    if (local < 1)
      return invalid_argument(
          fmt::format("{}='{}' has no entry for node {}", list_name, list, node.value()));
    env.local_world_size = local;
  }
  if (Status s = check_ranks(env, "SLURM_PROCID", "SLURM_LOCALID"); !s.is_ok()) return s;
  const char* nodes =
      vars.has("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
  int port = kDefaultMasterPort;
  if (vars.has("SLURM_JOB_ID")) {
    Result<int> job = vars.number("SLURM_JOB_ID", 0, std::numeric_limits<int>::max(), 0);
    if (!job.is_ok()) return job.status();
    port += job.value() % 1000;
  }
  if (Status s = read_master(vars, first_slurm_host(vars.text(nodes)), port, env); !s.is_ok())
    return s;
  return env;
}

}  // namespace

std::string to_string(Launcher launcher) {
  static constexpr auto kNames = enum_names<Launcher>(
      {{Launcher::kNone, "none"}, {Launcher::kTorchrun, "torchrun"}, {Launcher::kSlurm, "slurm"}});
  return kNames.name(launcher);
}

Result<LaunchEnv> read_launch_env(const EnvLookup& lookup) {
  const Variables vars(lookup);
  if (vars.has("RANK") || vars.has("WORLD_SIZE")) return read_torchrun(vars);
  if (vars.has("SLURM_PROCID") && vars.has("SLURM_NTASKS")) {
    Result<int> world = vars.number("SLURM_NTASKS", 1, kMaxWorld, std::nullopt);
    if (!world.is_ok()) return world.status();
    if (world.value() > 1) return read_slurm(vars, world.value());
  }
  return LaunchEnv();
}

Result<LaunchEnv> read_launch_env() {
  return read_launch_env([](const char* name) -> const char* { return std::getenv(name); });
}

std::string first_slurm_host(const std::string& nodelist) {
  const size_t end = nodelist.find_first_of(",[");
  std::string host = nodelist.substr(0, end);
  if (end == std::string::npos || nodelist[end] != '[') return host;
  const size_t first = end + 1;
  const size_t stop = nodelist.find_first_of("-,]", first);
  if (stop == std::string::npos) return "";
  return host + nodelist.substr(first, stop - first);
}

int slurm_tasks_on_node(const std::string& tasks_per_node, int node) {
  size_t at = 0;
  while (at < tasks_per_node.size()) {
    const char* begin = tasks_per_node.data() + at;
    const char* end = tasks_per_node.data() + tasks_per_node.size();
    int tasks = 0;
    auto parsed = std::from_chars(begin, end, tasks);
    if (parsed.ec != std::errc() || tasks < 1) return -1;
    int repeat = 1;
    const char* p = parsed.ptr;
    if (end - p >= 2 && p[0] == '(' && p[1] == 'x') {
      parsed = std::from_chars(p + 2, end, repeat);
      if (parsed.ec != std::errc() || repeat < 1 || parsed.ptr == end || *parsed.ptr != ')')
        return -1;
      p = parsed.ptr + 1;
    }
    if (node < repeat) return tasks;
    node -= repeat;
    if (p == end) return -1;
    if (*p != ',') return -1;
    at = static_cast<size_t>(p + 1 - tasks_per_node.data());
  }
  return -1;
}

}  // namespace stoker
