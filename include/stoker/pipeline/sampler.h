#pragma once
// Sampler: which dataset indices each rank reads, batch by batch (docs/DESIGN.md contracts 1-3).
//
// Global order. The global order of epoch e is a permutation of [0, N), with dataset indices
// in shard order (the manifest's). With shuffle and shuffle_window 0 ("all", the default), the
// Fisher-Yates shuffle of the identity driven by CounterRng(seed, order_stream(e)) (see
// stoker/util/rng.h):
//     order = [0, 1, ..., N-1]
//     for i = N-1 down to 1: j = rng.uniform_below(i + 1); swap(order[i], order[j])
// It depends only on (seed, epoch, N).
// With shuffle_window w >= 1, the shard-window shuffle (docs/REMOTE-DESIGN.md section 2): for S
// shards of c_0 ... c_{S-1} records,
//   1. pi = the Fisher-Yates permutation of [0, S) driven by CounterRng(seed,
//      shard_order_stream(e)), as above;
//   2. C_j = c_pi(0) + ... + c_pi(j-1): where the j-th permuted shard starts if concatenated;
//   3. L = ceil(min(w, S) * N / S): w average shards, in samples;
//   4. record i of shard pi(j) gets the key C_j * 2^20 + floor(r_i * L * 2^20 / 2^64), with
//      r_i = random_at(seed, window_stream(e), i) (an exact 128-bit product);
//   5. the order is the records sorted by (key, i).
// Each shard's records spread uniformly over the L positions from where it would start in the
// permuted concatenation, so at most M = floor((L - 1) / c_min) + 1 shards (w for equal ones)
// are live (between their first and last position) at any position. It depends only on (seed,
// epoch, w, the shards' record counts).
// Without shuffle, the identity.
// Repeated augmentation (repeats k >= 2, the references' RASampler): the order above is the
// base order B, and the epoch's order holds each of its samples k times in a row, for an
// epoch of the same length: order[q] = B[floor(q / k)] for q in [0, N), position q being repeat
// q mod k of its sample (which draws its own augmentation: rng.h's sample_stream with a repeat).
// An epoch so sees ceil(N / k) distinct samples, each k times (the last one maybe fewer), as
// RASampler does (which also cuts each rank's share to a multiple of 256 / W: stoker keeps
// last_batch's modes instead). Dealt strided, a sample's repeats go to k different ranks when
// W >= k. Each (sample, repeat) pair lies at one position: exactly once per repeat.
//
// Samples per record (the "per_record" order, GlobalOrder::samples_per_record K > 1): the
// order's values are samples s in [0, K x records), each dealt as dataset index s div K with
// part s mod K (IndexSpan::part), its draws sample s's (IndexSpan::sample); order() gives the
// dataset indices.
//
// Global position. A position p in [0, N] counts the samples of the global order consumed so far
// in the epoch, by all ranks together; it is the resume point ("global samples consumed").
// For padding, a position p >= N stands for order[p mod N]: the order repeats from its start.
//
// Dealing. From position `start` the remaining R = N - start positions are dealt to the W ranks
// strided, as PyTorch's DistributedSampler does: rank r gets positions start + r,
// start + r + W, start + r + 2W, ...
//   LastBatch::kShort: every rank gets ceil(R/W) positions, so the deal is padded to
//     ceil(R/W) * W positions; the at most W - 1 positions past N repeat the epoch's order from
//     its beginning (for start = 0 exactly DistributedSampler's padding). They are cut into
//     batches of batch_size B; the last batch may be short, and is equally short on every rank.
//   LastBatch::kDrop: every rank gets floor(R / (W*B)) full batches; the global tail of fewer
//     than W*B positions is dropped.
//   LastBatch::kPad: every rank gets ceil(R / (W*B)) full batches; the deal is padded to a
//     multiple of W*B positions, those past N repeating the order from its beginning (wrapping
//     again if W*B > N). Every batch has B samples: a fixed shape.
// Batch b of rank r therefore holds order[(start + (b*B + i)*W + r) mod N] for i in [0, B), and
// after every rank has consumed batches [0, b] the consumed positions are exactly
// [start, start + (b+1)*B*W), clamped to N. So global_position_after() is a prefix position:
// a plan started there on the same world size yields exactly the remaining batches (padding
// included), and on any other world size continues the same global order (elastic resume).
// Positions grow along a rank's deal, so a batch's padding (positions >= N) is its tail:
// EpochPlan::padding() counts it. start >= N gives an empty plan.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "stoker/pipeline/global_order.h"
#include "stoker/util/enum_names.h"

namespace stoker {

// What happens to an epoch's tail that does not fill a batch on every rank (see above).
enum class LastBatch {
  kShort,  // a short last batch (DataLoader's drop_last=False)
  kDrop,   // dropped (drop_last=True)
  kPad,    // a full batch, its tail padded with samples from the epoch's start
};

inline constexpr auto kLastBatchNames = enum_names<LastBatch>(
    {{LastBatch::kShort, "short"}, {LastBatch::kDrop, "drop"}, {LastBatch::kPad, "pad"}});

// SamplerOptions::shuffle_window of the global Fisher-Yates shuffle.
inline constexpr int64_t kShuffleAll = 0;

// How a Sampler orders and shards one dataset. Plain value.
struct SamplerOptions {
  uint64_t seed = 0;                         // selects the shuffled order
  bool shuffle = true;                       // false: the global order is the identity
  int rank = 0;                              // this process's rank, in [0, world_size)
  int world_size = 1;                        // number of ranks sharing the dataset
  int64_t batch_size = 1;                    // samples per batch on each rank
  LastBatch last_batch = LastBatch::kShort;  // the epoch's tail
  int64_t shuffle_window = kShuffleAll;      // shards per window (>= 1), or all: see above
  int64_t repeats = 1;                       // >= 1: each sample's repeats in a row, see above
};

// A read-only view of contiguous dataset indices. Borrowed: valid while the EpochPlan it came
// from (or any copy of that plan) is alive. Plain value.
struct IndexSpan {
  const int64_t* data = nullptr;
  size_t size = 0;
  const int32_t* repeats = nullptr;  // each sample's repeat (see above), or null: all 0
  // Each sample's part of its record and the samples a record gives (above), or null and 1.
  const int32_t* parts = nullptr;
  int64_t per_record = 1;

  const int64_t* begin() const { return data; }
  const int64_t* end() const { return data + size; }
  int64_t operator[](size_t i) const { return data[i]; }
  int64_t repeat(size_t i) const { return repeats ? repeats[i] : 0; }
  int64_t part(size_t i) const { return parts ? parts[i] : 0; }
  // The sample's number, whose stream it draws from: its dataset index, or index x K + part.
  int64_t sample(size_t i) const { return data[i] * per_record + part(i); }
};

// A caller's batches for one rank's epoch (a torch Sampler's or batch_sampler's): the indices
// it reads, in its order. Plain value.
struct ExplicitBatches {
  std::vector<int64_t> indices;      // this rank's whole sequence for the epoch, batch after batch
  std::vector<int64_t> batch_sizes;  // its cut into batches: they sum to indices.size()
  int64_t start = 0;                 // samples of the sequence already consumed: a batch boundary
  // true: an index's k-th occurrence draws as repeat k (a RASampler's repeats); false: every
  // occurrence as the first, as an order that deals a record twice in an epoch (a mixture's
  // cycling source) draws it, whatever the rank's share of the sequence.
  bool repeats = true;
};

// The batches of one epoch for one rank, from a given position: a Sampler's (global positions,
// as above) or an explicit plan's (of_batches). Immutable; copies share the index array;
// thread-safe to read from any number of threads.
class EpochPlan {
 public:
  // An empty plan: no batches.
  EpochPlan() = default;

  // An explicit plan: `batches`' sequence cut into its batches, from its sample batches.start,
  // over a dataset of `dataset_size` records, each batch holding at most `batch_size`. Its
  // positions count the sequence's samples (this rank's alone): global_position_after(b) is
  // start plus the samples of batches [0, b]. No padding; an index's k-th occurrence in the
  // sequence has repeat k where batches.repeats says so (a RASampler's repeats draw their own
  // augmentations), else 0. Throws Error
  // (kInvalidArgument), naming the batch (of the whole sequence) or value, for epoch < 0, a
  // batch size outside [1, batch_size], sizes that do not sum to the indices, a start that is
  // not a batch boundary, or an index outside [0, dataset_size).
  static EpochPlan of_batches(int64_t epoch, ExplicitBatches batches, int64_t dataset_size,
                              int64_t batch_size);

  // The epoch this plan belongs to.
  int64_t epoch() const { return epoch_; }
  // The position the plan starts at.
  int64_t start() const { return start_; }
  // Number of batches; for a Sampler's, identical on every rank for the same (epoch, start).
  int64_t num_batches() const { return num_batches_; }
  // Dataset indices of batch `b` for this rank. A Sampler's: batch_size of them, except that the
  // last batch may be shorter with LastBatch::kShort (equally on every rank). Throws Error
  // (kInvalidArgument) unless 0 <= b < num_batches().
  IndexSpan batch(int64_t b) const;
  // How many of batch `b`'s samples, at its end, are padding (positions past the dataset's
  // size, repeating samples from the epoch's start); 0 for all but the last batch or two.
  // Throws Error (kInvalidArgument) unless 0 <= b < num_batches().
  int64_t padding(int64_t b) const;
  // The position once every rank has consumed batches [0, b]: start() plus the samples all
  // ranks consumed, clamped to the dataset size (an explicit plan: start() plus this rank's
  // samples). Throws Error (kInvalidArgument) unless 0 <= b < num_batches().
  int64_t global_position_after(int64_t b) const;
  // The plan's whole index sequence: a Sampler's from start(), an explicit plan's all of it.
  IndexSpan sequence() const;
  // Asks the CPU to bring batch `b`'s indices into its caches (nothing for a `b` out of range):
  // read a batch ahead, they are at hand when it opens (a large epoch's are not otherwise: one
  // line of them a batch, evicted by the batch's own bytes).
  void prefetch(int64_t b) const;

 private:
  friend class Sampler;
  // Batch b is indices[offsets[b], offsets[b + 1]); positions are clamped to `max_position`.
  EpochPlan(int64_t epoch, int64_t start, int64_t max_position, int64_t world_size,
            int64_t unpadded, std::vector<int64_t> indices, std::vector<int32_t> repeats,
            std::vector<int64_t> offsets, std::vector<int32_t> parts = {}, int64_t per_record = 1);
  void check_batch(int64_t b) const;
  IndexSpan span(int64_t first, int64_t size) const;

  int64_t epoch_ = 0;
  int64_t start_ = 0;
  int64_t max_position_ = 0;
  int64_t world_size_ = 1;
  int64_t num_batches_ = 0;
  int64_t unpadded_ = 0;  // this rank's samples that are not padding: the first ones
  // This rank's indices, and their repeats (empty without repeats).
  std::shared_ptr<const std::vector<int64_t>> indices_;
  std::shared_ptr<const std::vector<int32_t>> repeats_;
  // Their parts (empty: all 0) where a record gives per_record_ samples.
  std::shared_ptr<const std::vector<int32_t>> parts_;
  int64_t per_record_ = 1;
  // Where each batch begins in indices_, then where the last ends (num_batches_ + 1 values).
  std::shared_ptr<const std::vector<int64_t>> offsets_;
};

// Plans epochs over a dataset of fixed size (the semantics at the top of this file). Immutable
// after construction; plan() is const and thread-safe.
class Sampler {
 public:
  // Dealing `order` (global_order.h): its epochs' positions are the positions above, its
  // indices the dataset indices; options' seed, shuffle and shuffle_window are the order's
  // business, not read here. Precondition (asserted; LoaderCore checks its options before it
  // makes one): batch_size > 0, world_size > 0, rank in [0, world_size), repeats in [1, 2^31).
  Sampler(std::shared_ptr<const GlobalOrder> order, SamplerOptions options);
  // Over a dataset of shards of `shard_records` records each, in the order options say: "global"
  // (shuffle_window kShuffleAll, or no shuffle) or "shard_window". Precondition as above, and:
  // the records sum to more than 0, every count >= 0, shuffle_window >= 0.
  Sampler(std::vector<int64_t> shard_records, SamplerOptions options);
  // Over a dataset of one shard of `dataset_size` records.
  Sampler(int64_t dataset_size, SamplerOptions options);

  // The plan of epoch `epoch` for this rank, starting at global position `start` (0 = epoch
  // start; or a position saved from a plan with any world size). Costs O(N) time and memory
  // while building, O(N / world_size) kept. Throws Error (kInvalidArgument) if epoch < 0 or
  // start < 0, and Error (kCancelled) once the thread's cancellation in scope is set
  // (util/cancel_scope.h: Ctrl-C during a long epoch's build), as order() does.
  EpochPlan plan(int64_t epoch, int64_t start = 0) const;
  // plan(epoch, start) from the epoch's samples(epoch), computed once by a caller that needs
  // them for more (a shard source's schedule); a single rank's plan from the epoch's start
  // takes them as its indices. Precondition (asserted): samples.size() == dataset_size().
  EpochPlan plan(int64_t epoch, int64_t start, std::vector<int64_t> samples) const;
  // The order's samples of epoch `epoch`, repeats included: values in [0, dataset size x
  // samples per record). O(N) time and memory. Throws as plan() does.
  std::vector<int64_t> samples(int64_t epoch) const;
  // The global order of epoch `epoch` (the definition above, repeats included), as dataset
  // indices: samples(epoch) each divided by samples_per_record(). O(N) time and memory.
  std::vector<int64_t> order(int64_t epoch) const;
  // The samples each record gives (GlobalOrder::samples_per_record): 1 but for "per_record".
  int64_t samples_per_record() const;
  // plan(e, start).num_batches() for any epoch e, in O(1).
  int64_t num_batches(int64_t start = 0) const;

  const SamplerOptions& options() const { return options_; }
  // The positions of an epoch (the order's epoch_size(): the dataset's size but for a mixture).
  int64_t dataset_size() const { return dataset_size_; }

 private:
  // Samples this rank takes from global position `start` to the end of an epoch.
  int64_t samples_per_rank(int64_t start) const;

  std::shared_ptr<const GlobalOrder> order_;
  int64_t dataset_size_;
  SamplerOptions options_;
};

// How many of the positions rank `rank` of `world_size` is dealt from global position `start`
// of an epoch of `dataset_size` samples lie below dataset_size: its samples that are not padding
// (with LastBatch kShort or kPad). They come first, padding only ever ends a rank's deal: sharded
// evaluation counts each sample once by taking these.
int64_t unpadded_samples(int64_t dataset_size, int64_t start, int rank, int world_size);

}  // namespace stoker
