#pragma once
// Where the training thread's time goes, batch by batch: the trainer's "train" spans
// (trainer.h: data, h2d, forward, backward, optimizer with allreduce_wait inside) summed over a
// window of a trace. `stoker doctor` reads its runs this way, and its tests feed it synthetic
// traces. Plain values and a pure function.

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/trace/tracer.h"

namespace stoker {

// Seconds spent in each part over `batches` training batches; each part exclusive of the
// others (the optimizer's time excludes the all-reduce wait inside it).
struct StepSplit {
  int64_t batches = 0;  // "h2d" spans in the window: one per training batch
  double wall = 0;      // the window's length
  double data = 0;      // waiting for the loader's next batch
  double h2d = 0;       // making the model's input on its device (copy, normalisation)
  double forward = 0;
  double backward = 0;
  double optimizer = 0;
  double allreduce_wait = 0;  // distributed runs: waiting for the gradients' average
  // The loader's workers waiting for shards (their "pipeline" "fetch" spans, summed over the
  // workers): a remote dataset's network wait, apart from decode; 0 for a local dataset. Not a
  // part of the training thread's time: it shows there as data wait when the loader falls
  // behind.
  double fetch = 0;
  // The window's time in none of the above (progress, logging, the loop itself); >= 0.
  double other() const;
  // Seconds per batch of `part` (0 without batches).
  double per_batch(double part) const;
  // Batches per second of `part` (0 when `part` is not positive): the rate of the loop as if
  // it spent only that time.
  double per_second(double part) const;
  // The compute a batch needs: forward + backward + optimizer (+ the all-reduce wait).
  double compute() const { return forward + backward + optimizer + allreduce_wait; }
  // The parts in order, with their names as the trainer's spans name them, and "other".
  std::vector<std::pair<std::string, double>> parts() const;
};

// Sums the "train" spans of `trace` that lie wholly inside [from_ns, to_ns) (Tracer::now_ns()
// times), and the pipeline's "fetch" spans. Other spans (the pipeline's others, LibTorch's
// operators) are ignored.
StepSplit split_steps(const std::vector<ThreadTrace>& trace, int64_t from_ns, int64_t to_ns);

// Seconds of the spans of `category` named `name` that lie wholly inside [from_ns, to_ns), over
// every thread (e.g. the loader workers' "pipeline" "piece" spans: their busy time).
double sum_spans(const std::vector<ThreadTrace>& trace, const char* category, const char* name,
                 int64_t from_ns, int64_t to_ns);

}  // namespace stoker
