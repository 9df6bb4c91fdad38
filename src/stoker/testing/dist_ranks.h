#pragma once
// Test helpers for multi-process tests: run N ranks of a program over loopback with the
// variables torchrun sets, each rank's stdout and stderr in a file, never waiting past a
// deadline (ranks still running then are killed).

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/child_group.h"

namespace stoker::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's choice for port 0).
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

struct RanksRun {
  ChildOutcome outcome;
  std::vector<std::string> outputs;  // each rank's stdout and stderr
  double seconds = 0;                // until the last rank ended
};

// Which ranks to start and how.
struct RanksSpec {
  std::vector<std::string> argv;
  int world_size = 2;
  std::vector<int> ranks;                    // the ranks to start; empty: all of them
  std::vector<std::string> env;              // more "NAME=value" for every rank
  int port = 0;                              // MASTER_PORT; 0: a free one
  std::chrono::milliseconds timeout{60000};  // then every rank still running is killed
  // Once a rank fails, the others get this long to end on their own.
  std::chrono::milliseconds grace{60000};
};

// Starts the ranks of `spec` (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT set; output in dir/rank-R.txt) and waits for them.
inline RanksRun run_ranks(const RanksSpec& spec, const TempDir& dir) {
  const int port = spec.port ? spec.port : free_port();
  std::vector<int> ranks = spec.ranks;
  if (ranks.empty())
    for (int r = 0; r < spec.world_size; ++r) ranks.push_back(r);
  ChildGroup group;
  const auto start = std::chrono::steady_clock::now();
  for (int r : ranks) {
    ChildSpec child;
    child.argv = spec.argv;
    child.env = {
        "RANK=" + std::to_string(r),       "WORLD_SIZE=" + std::to_string(spec.world_size),
        "LOCAL_RANK=" + std::to_string(r), "LOCAL_WORLD_SIZE=" + std::to_string(spec.world_size),
        "MASTER_ADDR=127.0.0.1",           "MASTER_PORT=" + std::to_string(port)};
    child.env.insert(child.env.end(), spec.env.begin(), spec.env.end());
    child.output_path = dir / ("rank-" + std::to_string(r) + ".txt");
    throw_if_error(group.start(child));
  }
  RanksRun run;
  run.outcome = group.wait(spec.timeout, spec.grace);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int r : ranks)
    run.outputs.push_back(read_file(dir / ("rank-" + std::to_string(r) + ".txt")).value_or_throw());
  return run;
}

}  // namespace stoker::testing
