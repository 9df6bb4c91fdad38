#pragma once
// ProcessGroup: the ranks of one multi-process run connected through PyTorch's own c10d — a
// TCPStore for the rendezvous (served by rank 0, or by torchrun's agent), ProcessGroupGloo for
// the collectives on CPU tensors and, with DistBackend::kNccl (a CUDA LibTorch with NCCL),
// ProcessGroupNCCL for those on CUDA tensors — with the few collectives stoker uses and their
// failures as Status values that name the rank, the operation and the cause. A peer that died makes
// a collective fail as soon as its connection closes; a peer that hangs makes it fail after the
// timeout: never a silent hang.
//
//   LaunchEnv env = read_launch_env().value_or_throw();   // torchrun's or SLURM's variables
//   auto group = ProcessGroup::connect(env, std::chrono::minutes(5)).value_or_throw();
//   throw_if_error(group->all_reduce({tensor}));            // sums across ranks, in place
//
// Every rank must call the same collectives in the same order with tensors of the same shapes.
// Thread-safety: collectives may be started from any one thread at a time; the async work they
// return may be waited on from another.

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/distributed/launch_env.h"
#include "stoker/util/enum_names.h"
#include "stoker/util/status.h"

namespace c10d {
class Store;
}  // namespace c10d

namespace stoker {

// How long a rank waits for its peers (connecting, or inside a collective) before failing.
inline constexpr std::chrono::seconds kDefaultDistTimeout{300};

// What carries the collectives on CUDA tensors: Gloo (through host memory) or NCCL (GPU to
// GPU). CPU tensors always go through Gloo.
enum class DistBackend { kGloo, kNccl };
inline constexpr auto kDistBackendNames =
    enum_names<DistBackend>({{DistBackend::kGloo, "gloo"}, {DistBackend::kNccl, "nccl"}});

// Whether this build can use DistBackend::kNccl: built against a LibTorch with CUDA and with
// NCCL beside it (the configure line of cmake/TorchSummary.cmake says).
bool nccl_available();

// How a collective combines the ranks' values.
enum class ReduceOp { kSum, kMax, kMin };

// A collective started with ProcessGroup::all_reduce_async. Move-only.
class PendingReduce {
 public:
  PendingReduce();
  PendingReduce(PendingReduce&&) noexcept;
  PendingReduce& operator=(PendingReduce&&) noexcept;
  ~PendingReduce();  // waits for the work if it was not waited on (errors are then dropped)

  // Blocks until the collective is complete; a Status like the blocking collectives'. Call once.
  [[nodiscard]] Status wait();
  // True once the collective finished (either way); does not block.
  bool done() const;

 private:
  friend class ProcessGroup;
  struct State;
  explicit PendingReduce(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class ProcessGroup {
 public:
  // Connects to the other ranks of `env` (env.distributed() must be true): a TCPStore at
  // env.master_addr:env.master_port (a client of torchrun's agent with env.agent_store, else
  // served by rank 0), under a prefix per restart, then ProcessGroupGloo over it; the gloo
  // device binds to the interface named by GLOO_SOCKET_IFNAME if set, else to this host's name
  // (to the loopback interface if the name does not resolve), as PyTorch does. Waits at most
  // `timeout` for every rank to connect; `timeout` is also every later collective's limit.
  // With DistBackend::kNccl, also ProcessGroupNCCL over the same store (its communicator made
  // on the first collective on a CUDA tensor, on that tensor's device); kInvalidArgument where
  // !nccl_available().
  // kInvalidArgument for a non-distributed env or a timeout <= 0; kIoError naming the store's
  // address (unreachable, port in use, a rank missing after `timeout`) otherwise.
  static Result<std::unique_ptr<ProcessGroup>> connect(const LaunchEnv& env,
                                                       std::chrono::milliseconds timeout,
                                                       DistBackend backend = DistBackend::kGloo);
  // Over an existing store (a c10d::Store such as a TCPStore whose keys no other group uses):
  // for tests and programs that host the store themselves. Errors as connect().
  static Result<std::unique_ptr<ProcessGroup>> over_store(c10::intrusive_ptr<c10d::Store> store,
                                                          int rank, int world_size,
                                                          std::chrono::milliseconds timeout,
                                                          DistBackend backend = DistBackend::kGloo);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  DistBackend backend() const;
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Combines each of `tensors` element-wise across ranks, in place (dense, contiguous; CUDA
  // tensors through NCCL with DistBackend::kNccl, the others through Gloo); blocks until done.
  // kIoError naming this rank and the cause (a peer closed the connection, or did not answer within
  // the timeout).
  [[nodiscard]] Status all_reduce(const std::vector<at::Tensor>& tensors,
                                  ReduceOp op = ReduceOp::kSum);
  // Starts a sum of `tensor` (dense, contiguous) across ranks in place and returns at once; the
  // tensor must not be touched until wait() returns. A failure to start is reported by wait().
  PendingReduce all_reduce_async(const at::Tensor& tensor);
  // Copies rank `root`'s values of `tensors` into every rank's, in place (any layout: a
  // non-contiguous tensor goes through a contiguous copy).
  [[nodiscard]] Status broadcast(const std::vector<at::Tensor>& tensors, int root = 0);
  // Returns once every rank has called it.
  [[nodiscard]] Status barrier();

 private:
  friend class PendingReduce;
  struct Impl;  // the c10d objects; shared with the PendingReduces in flight
  explicit ProcessGroup(std::shared_ptr<Impl> impl);

  std::shared_ptr<Impl> impl_;
  int rank_;
  int world_size_;
  std::chrono::milliseconds timeout_;
};

}  // namespace stoker
