#include "stoker/distributed/launch_env.h"

#include <gtest/gtest.h>

#include <map>

namespace stoker {
namespace {

using Vars = std::map<std::string, std::string>;

Result<LaunchEnv> read(const Vars& vars) {
  return read_launch_env([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

void expect_error(const Vars& vars, const std::string& words) {
  Result<LaunchEnv> env = read(vars);
  ASSERT_FALSE(env.is_ok()) << words;
  EXPECT_EQ(env.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(env.status().message().find(words), std::string::npos) << env.status().message();
}

TEST(LaunchEnvTest, NoLauncherIsOneProcess) {
  const LaunchEnv env = read({}).value_or_throw();
  EXPECT_EQ(env.launcher, Launcher::kNone);
  EXPECT_EQ(env.world_size, 1);
  EXPECT_FALSE(env.distributed());
  // A SLURM step of one task is one process too.
  EXPECT_FALSE(read({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}).value_or_throw().distributed());
}

TEST(LaunchEnvTest, ReadsTorchrunsVariables) {
  const LaunchEnv env = read({{"RANK", "3"},
                              {"WORLD_SIZE", "4"},
                              {"LOCAL_RANK", "1"},
                              {"LOCAL_WORLD_SIZE", "2"},
                              {"MASTER_ADDR", "node7"},
                              {"MASTER_PORT", "29400"},
                              {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                              {"TORCHELASTIC_RESTART_COUNT", "2"},
                              {"SLURM_PROCID", "9"},
                              {"SLURM_NTASKS", "16"}})
                            .value_or_throw();
  EXPECT_EQ(env.launcher, Launcher::kTorchrun);  // before SLURM's
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_EQ(env.master_addr, "node7");
  EXPECT_EQ(env.master_port, 29400);
  EXPECT_TRUE(env.agent_store);
  EXPECT_EQ(env.restart_count, 2);
  EXPECT_TRUE(env.distributed());
}

TEST(LaunchEnvTest, TorchrunDefaultsAreOneHostAndRankZeroServes) {
  const LaunchEnv env = read({{"RANK", "1"},
                              {"WORLD_SIZE", "2"},
                              {"MASTER_ADDR", "127.0.0.1"},
                              {"MASTER_PORT", "1234"},
                              {"TORCHELASTIC_USE_AGENT_STORE", "False"}})
                            .value_or_throw();
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_FALSE(env.agent_store);
  EXPECT_EQ(env.restart_count, 0);
  // One process under torchrun needs no store.
  const LaunchEnv one = read({{"RANK", "0"}, {"WORLD_SIZE", "1"}}).value_or_throw();
  EXPECT_EQ(one.launcher, Launcher::kTorchrun);
  EXPECT_FALSE(one.distributed());
}

TEST(LaunchEnvTest, BadTorchrunVariablesAreNamed) {
  const Vars base = {
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "5"}};
  auto with = [&base](const std::string& name, const std::string& value) {
    Vars v = base;
    v[name] = value;
    return v;
  };
  auto without = [&base](const std::string& name) {
    Vars v = base;
    v.erase(name);
    return v;
  };
  expect_error(without("WORLD_SIZE"), "WORLD_SIZE is not set");
  expect_error(without("RANK"), "RANK is not set");
  expect_error(without("MASTER_ADDR"), "MASTER_ADDR is not set");
  expect_error(without("MASTER_PORT"), "MASTER_PORT is not set");
  expect_error(with("RANK", "2"), "RANK=2 is not a rank of a world of 2");
  expect_error(with("RANK", "one"), "RANK='one' is not a whole number");
  expect_error(with("RANK", "1x"), "RANK='1x' is not a whole number");
  expect_error(with("RANK", ""), "RANK='' is not a whole number");
  expect_error(with("RANK", "-1"), "RANK=-1 is outside");
  expect_error(with("WORLD_SIZE", "0"), "WORLD_SIZE=0 is outside");
  expect_error(with("MASTER_PORT", "65536"), "MASTER_PORT=65536 is outside [1, 65535]");
  expect_error(with("MASTER_PORT", "99999999999"), "MASTER_PORT='99999999999' is not a whole");
  Vars second = with("RANK", "1");  // LOCAL_RANK defaults to RANK
  second["LOCAL_WORLD_SIZE"] = "1";
  expect_error(second, "LOCAL_RANK=1 is not a rank of the 1 processes of this host");
  Vars local = with("LOCAL_WORLD_SIZE", "2");
  local["LOCAL_RANK"] = "2";
  expect_error(local, "LOCAL_RANK=2 is not a rank of the 2 processes of this host");
  expect_error(with("TORCHELASTIC_RESTART_COUNT", "x"), "TORCHELASTIC_RESTART_COUNT='x'");
}

TEST(LaunchEnvTest, ReadsSlurmsVariables) {
  const Vars slurm = {{"SLURM_PROCID", "5"},          {"SLURM_NTASKS", "6"},
                      {"SLURM_LOCALID", "1"},         {"SLURM_NODEID", "2"},
                      {"SLURM_JOB_ID", "123456"},     {"SLURM_STEP_TASKS_PER_NODE", "2(x2),4"},
                      {"SLURM_TASKS_PER_NODE", "9"},  {"SLURM_STEP_NODELIST", "gpu[07-09],cpu1"},
                      {"SLURM_JOB_NODELIST", "other"}};
  LaunchEnv env = read(slurm).value_or_throw();
  EXPECT_EQ(env.launcher, Launcher::kSlurm);
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 6);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 4);  // node 2's entry of the step's list
  EXPECT_EQ(env.master_addr, "gpu07");
  EXPECT_EQ(env.master_port, kDefaultMasterPort + 456);
  EXPECT_FALSE(env.agent_store);

  Vars given = slurm;
  given["MASTER_ADDR"] = "head";
  given["MASTER_PORT"] = "4000";
  given["SLURM_NTASKS_PER_NODE"] = "3";
  env = read(given).value_or_throw();
  EXPECT_EQ(env.master_addr, "head");
  EXPECT_EQ(env.master_port, 4000);
  EXPECT_EQ(env.local_world_size, 3);

  Vars bare = {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n1"}};
  env = read(bare).value_or_throw();
  EXPECT_EQ(env.master_addr, "n1");
  EXPECT_EQ(env.master_port, kDefaultMasterPort);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_EQ(env.local_world_size, 1);
}

TEST(LaunchEnvTest, BadSlurmVariablesAreNamed) {
  expect_error({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "h"}},
               "SLURM_PROCID=2 is not a rank of a world of 2");
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}, "MASTER_ADDR is not set");
  expect_error({{"SLURM_PROCID", "0"},
                {"SLURM_NTASKS", "2"},
                {"SLURM_NODEID", "3"},
                {"SLURM_TASKS_PER_NODE", "1(x2)"},
                {"MASTER_ADDR", "h"}},
               "SLURM_TASKS_PER_NODE='1(x2)' has no entry for node 3");
  expect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "x"}}, "SLURM_NTASKS='x'");
}

TEST(LaunchEnvTest, SlurmHostListsAndTaskCounts) {
  EXPECT_EQ(first_slurm_host("node[07-09,12],gpu1"), "node07");
  EXPECT_EQ(first_slurm_host("a,b"), "a");
  EXPECT_EQ(first_slurm_host("single"), "single");
  EXPECT_EQ(first_slurm_host("n[3,5]"), "n3");
  EXPECT_EQ(first_slurm_host(""), "");
  EXPECT_EQ(first_slurm_host("n[3"), "");

  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 0), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 3), 1);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 4), -1);
  EXPECT_EQ(slurm_tasks_on_node("4", 0), 4);
  for (const char* bad : {"", "x", "2(x", "2(x0)", "2(x3", "2;1", "0", "2,"})
    EXPECT_EQ(slurm_tasks_on_node(bad, 1), -1) << bad;
}

}  // namespace
}  // namespace stoker
