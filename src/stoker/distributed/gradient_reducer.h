#pragma once
// GradientReducer: averages a model's gradients over the ranks of a ProcessGroup the way
// PyTorch's DistributedDataParallel does, overlapped with the backward pass. The parameters
// are grouped into buckets of about `bucket_bytes` in reverse order (the order backward
// produces their gradients; the first bucket small, so communication starts early), and a hook
// on each parameter's gradient accumulator copies its gradient into its bucket once it is
// complete; a bucket whose gradients are all there starts its all-reduce (a sum) at once while
// backward goes on with the layers below. synchronize() waits for the buckets and writes the
// sums divided by the world size back into the gradients, identical on every rank.
//
//   GradientReducer reducer(group, model.parameters());
//   for each micro-batch m of a step:
//     reducer.prepare(/*overlap=*/m == last);   // earlier micro-batches only accumulate
//     loss.backward();
//   throw_if_error(reducer.synchronize());       // once per optimizer step
//
// With gradient accumulation only the step's last backward overlaps: the others accumulate
// locally, and one all-reduce per step carries their sum. A step whose last backward was not
// prepared is reduced entirely in synchronize(). Every rank must prepare and synchronize the
// same steps. Parameters that got no gradient count as zero. The reducer does not broadcast
// the initial parameters: do that first (ProcessGroup::broadcast from rank 0).
//
// Thread-safety: prepare() and synchronize() on one thread, with no backward pass running;
// the hooks may run on autograd's threads.

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "stoker/distributed/process_group.h"
#include "stoker/util/status.h"

namespace stoker {

struct GradientReducerOptions {
  size_t bucket_bytes = 25u << 20;       // DDP's bucket cap
  size_t first_bucket_bytes = 1u << 20;  // the bucket of the last layers (DDP's first bucket)
};

// Time the all-reduces took, summed over synchronize() calls that averaged gradients.
struct AllReduceStats {
  int64_t reductions = 0;           // optimizer steps reduced
  int64_t buckets = 0;              // bucket all-reduces started
  int64_t buckets_in_backward = 0;  // of those, started by the hooks while backward ran
  // From the first bucket's start to the end of synchronize()'s wait, per reduction: the
  // all-reduces' span.
  double reduce_seconds = 0;
  // Of reduce_seconds, the time synchronize() waited: communication that backward did not hide.
  // The overlapped part is reduce_seconds - exposed_seconds.
  double exposed_seconds = 0;
};

class GradientReducer {
 public:
  // Hooks the gradient accumulators of `params` (those that require a gradient; at least one
  // must; each a leaf tensor, e.g. Model::parameters()) and lays out the buckets. `group` and
  // the parameters must outlive the reducer. Throws Error (kInvalidArgument) for no trainable
  // parameter or a parameter that is not a leaf.
  GradientReducer(ProcessGroup& group, const std::vector<at::Tensor>& params,
                  GradientReducerOptions options = {});
  // Removes the hooks; waits for all-reduces still in flight.
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Before the backward pass that ends a step: `overlap` arms the hooks so its buckets start
  // their all-reduces as they fill. `vote` (e.g. 1 for "stop after this step") travels with the
  // gradients; votes() gives the sum over ranks after synchronize().
  void prepare(bool overlap, float vote = 0);
  // Completes the step's reduction (starting the buckets not yet started, from the current
  // gradients) and replaces every gradient by its average over the ranks. kIoError naming the
  // rank and cause if a peer failed; the gradients are then undefined garbage.
  [[nodiscard]] Status synchronize();
  // The sum over ranks of the votes given to the last prepare() before synchronize().
  float votes() const { return votes_; }

  size_t bucket_count() const;
  const AllReduceStats& stats() const { return stats_; }

 private:
  struct State;  // buckets, slots, hooks
  std::unique_ptr<State> state_;
  float votes_ = 0;
  AllReduceStats stats_;
};

}  // namespace stoker
