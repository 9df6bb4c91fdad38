// "mixture": the parts (a mixture's sources) mixed by weight, the weights changing at given
// samples of the run (a schedule). The run's sample g is position g mod N of epoch g div N; the
// change points cut each epoch into pieces (a segment, between two points, meets an epoch in
// one piece). A piece of L positions holds exactly c_p samples of part p (L's
// largest-remainder apportionment by its segment's weights), interleaved by a seeded shuffle
// (unshuffled: spread evenly); each part runs through its own epochs at its own pace, in its own
// shuffled order, across pieces and epochs, so every sample of a part comes once before any
// comes twice. Weights may be shares of tokens: each part's weight over its mean tokens per
// sample. docs/DESIGN.md contract 13 states it.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "stoker/pipeline/order_registry.h"
#include "stoker/util/cancel_scope.h"
#include "stoker/util/machine.h"
#include "stoker/util/permutation.h"
#include "stoker/util/rng.h"

namespace stoker::orders {
namespace {

// n samples apportioned by `quotas` (summing to n: each part's exact samples, which may be under
// 0 by less than a sample where earlier pieces gave the part more than its share): floor(quota)
// each, none under 0; then while under n one more each to the largest remainders (quota -
// count), while over n one fewer each from the smallest, none under 0 (ties: one more to the
// lower part, one fewer from the higher).
// Quotas of n x share: n's largest-remainder apportionment.
std::vector<int64_t> apportioned(int64_t n, const std::vector<double>& quotas) {
  std::vector<int64_t> counts(quotas.size());
  int64_t left = n;
  for (size_t p = 0; p < quotas.size(); ++p) {
    counts[p] = std::max<int64_t>(0, static_cast<int64_t>(std::floor(quotas[p])));
    left -= counts[p];
  }
  const auto remainder = [&](size_t p) { return quotas[p] - static_cast<double>(counts[p]); };
  std::vector<size_t> by_remainder(quotas.size());
  std::iota(by_remainder.begin(), by_remainder.end(), size_t{0});
  std::stable_sort(by_remainder.begin(), by_remainder.end(),
                   [&](size_t a, size_t b) { return remainder(a) > remainder(b); });
  for (size_t i = 0; left > 0; ++i, --left) ++counts[by_remainder[i % by_remainder.size()]];
  for (auto at = by_remainder.rbegin(); left < 0; ++at) {
    if (at == by_remainder.rend()) at = by_remainder.rbegin();
    if (counts[*at] > 0) --counts[*at], ++left;
  }
  return counts;
}

std::vector<double> quotas_of(int64_t n, const std::vector<double>& shares) {
  std::vector<double> quotas(shares.size());
  for (size_t p = 0; p < shares.size(); ++p) quotas[p] = static_cast<double>(n) * shares[p];
  return quotas;
}

// The parts of a piece of `counts` (summing to its length): shuffled by `stream`, or without
// shuffle spread evenly, position i to the part furthest behind its share,
// (i + 1) c_p / L - taken_p (ties: the lower part), which ends with exactly c_p each.
void interleave(const std::vector<int64_t>& counts, uint64_t seed, uint64_t stream, bool shuffle,
                int64_t* parts) {
  const int64_t size = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (shuffle) {
    std::vector<int64_t> blocks;
    for (size_t p = 0; p < counts.size(); ++p) blocks.insert(blocks.end(), counts[p], p);
    const std::vector<int64_t> at = fisher_yates(size, seed, stream);
    for (int64_t i = 0; i < size; ++i) {
      poll_cancellation(i);
      parts[i] = blocks[static_cast<size_t>(at[i])];
    }
    return;
  }
  std::vector<int64_t> given(counts.size(), 0);
  for (int64_t i = 0; i < size; ++i) {
    poll_cancellation(i);
    size_t best = 0;
    __int128 most = 0;
    for (size_t p = 0; p < counts.size(); ++p) {
      const __int128 behind =
          static_cast<__int128>(i + 1) * counts[p] - static_cast<__int128>(given[p]) * size;
      if (p == 0 || behind > most) {
        best = p;
        most = behind;
      }
    }
    parts[i] = static_cast<int64_t>(best);
    ++given[best];
  }
}

class Mixture : public GlobalOrder {
 public:
  // sizes[p]: part p's records; starts[k]: where segment k starts in the run's samples
  // (starts[0] = 0, increasing), shares[k] its parts' sample shares.
  Mixture(std::vector<int64_t> sizes, int64_t n, std::vector<int64_t> starts,
          std::vector<std::vector<double>> shares, uint64_t seed, bool shuffle)
      : sizes_(std::move(sizes)),
        size_(n),
        starts_(std::move(starts)),
        shares_(std::move(shares)),
        seed_(seed),
        shuffle_(shuffle) {
    for (const std::vector<double>& s : shares_)
      whole_.push_back(apportioned(size_, quotas_of(size_, s)));
  }

  int64_t epoch_size() const override { return size_; }

  std::vector<int64_t> order(int64_t epoch) const override {
    // Each piece's parts, its own stream (the epoch's for the piece at its start, so an epoch
    // of one piece is as without a schedule).
    const __int128 first = static_cast<__int128>(epoch) * size_;
    std::vector<int64_t> parts(static_cast<size_t>(size_));
    const std::vector<Piece> epoch_pieces = pieces(epoch);
    const std::vector<std::vector<int64_t>> epoch_counts = counts(epoch_pieces);
    for (size_t i = 0; i < epoch_pieces.size(); ++i) {
      const int64_t from = epoch_pieces[i].from;
      const uint64_t stream =
          from == 0 ? mixture_stream(epoch) : derive_stream(mixture_stream(epoch), from);
      interleave(epoch_counts[i], seed_, stream, shuffle_, parts.data() + from);
    }
    // The k-th of part p in the epoch is its sample j = before_p + k: record j mod n_p of the
    // part's epoch j div n_p (mod 2^64 as a stream), offset by the parts before it.
    const std::vector<__int128> before = taken_before(first);
    std::vector<int64_t> offset(sizes_.size(), 0), taken(sizes_.size(), 0),
        part_epoch(sizes_.size(), 0);
    for (size_t p = 1; p < sizes_.size(); ++p) offset[p] = offset[p - 1] + sizes_[p - 1];
    std::vector<std::vector<int64_t>> part_order(sizes_.size());
    std::vector<int64_t> order(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
      poll_cancellation(static_cast<int64_t>(i));
      const int64_t p = parts[i];
      const __int128 j = before[p] + taken[p]++;
      const auto e = static_cast<int64_t>(static_cast<uint64_t>(j / sizes_[p]));
      if (part_order[p].empty() || e != part_epoch[p]) {
        part_epoch[p] = e;
        part_order[p] = shuffle_ ? fisher_yates(sizes_[p], seed_, part_order_stream(p, e))
                                 : identity_order(sizes_[p]);
      }
      order[i] = offset[p] + part_order[p][static_cast<size_t>(j % sizes_[p])];
    }
    return order;
  }

 private:
  // The segment the run's sample g is in.
  size_t segment_at(__int128 g) const {
    return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), g) -
                               starts_.begin()) -
           1;
  }

  // A piece of an epoch: its segment and positions [from, to).
  struct Piece {
    size_t segment;
    int64_t from, to;
  };

  // Epoch e's pieces, in order.
  std::vector<Piece> pieces(int64_t epoch) const {
    const __int128 first = static_cast<__int128>(epoch) * size_;
    std::vector<Piece> out;
    for (size_t k = segment_at(first); k < starts_.size() && starts_[k] < first + size_; ++k) {
      const auto from = static_cast<int64_t>(std::max<__int128>(starts_[k], first) - first);
      const int64_t to =
          k + 1 < starts_.size()
              ? static_cast<int64_t>(std::min<__int128>(starts_[k + 1] - first, size_))
              : size_;
      out.push_back({k, from, to});
    }
    return out;
  }

  // Each part's samples in each of an epoch's pieces: its length apportioned by its segment's
  // shares, what the epoch's earlier pieces gave each part over or under its exact share
  // carried into the next, so a part whose share of a piece is under a sample still gets its
  // share over the epoch's pieces (each within a sample or two of it).
  std::vector<std::vector<int64_t>> counts(const std::vector<Piece>& epoch_pieces) const {
    std::vector<std::vector<int64_t>> out;
    std::vector<double> carried(sizes_.size(), 0.0);
    for (const Piece& piece : epoch_pieces) {
      const int64_t length = piece.to - piece.from;
      if (length == size_) {
        out.push_back(whole_[piece.segment]);
        continue;
      }
      std::vector<double> quotas = quotas_of(length, shares_[piece.segment]);
      for (size_t p = 0; p < quotas.size(); ++p) quotas[p] += carried[p];
      out.push_back(apportioned(length, quotas));
      for (size_t p = 0; p < quotas.size(); ++p)
        carried[p] = quotas[p] - static_cast<double>(out.back()[p]);
    }
    return out;
  }

  // Each part's samples in the run's first `end` samples (whole epochs): the epochs inside one
  // segment at once (its whole-epoch counts), each epoch a change cuts, piece by piece.
  // O(segments x parts).
  std::vector<__int128> taken_before(__int128 end) const {
    std::vector<__int128> before(sizes_.size(), 0);
    const auto add = [&](const std::vector<int64_t>& c, __int128 times) {
      for (size_t p = 0; p < c.size(); ++p) before[p] += times * c[p];
    };
    __int128 cut_epoch = -1;  // the last epoch a change cuts, counted
    for (size_t k = 0; k < starts_.size() && starts_[k] < end; ++k) {
      const __int128 a = starts_[k];
      const __int128 b = k + 1 < starts_.size() ? std::min<__int128>(starts_[k + 1], end) : end;
      const __int128 first_whole = (a + size_ - 1) / size_, last_whole = b / size_;
      if (last_whole > first_whole) add(whole_[k], last_whole - first_whole);
      if (a % size_ != 0 && a / size_ != cut_epoch) {
        cut_epoch = a / size_;
        for (const auto& c : counts(pieces(static_cast<int64_t>(cut_epoch)))) add(c, 1);
      }
    }
    return before;
  }

  std::vector<int64_t> sizes_;
  int64_t size_;
  std::vector<int64_t> starts_;
  std::vector<std::vector<double>> shares_;
  std::vector<std::vector<int64_t>> whole_;  // each segment's counts in a whole epoch
  uint64_t seed_;
  bool shuffle_;
};

// `weights` (one per part) as sample shares summing to 1: as given, or, for shares of tokens,
// each over its part's mean tokens per sample (w_p n_p / T_p, normalised).
std::vector<double> sample_shares(const double* weights, const std::vector<int64_t>& sizes,
                                  const std::vector<int64_t>& tokens) {
  std::vector<double> shares(sizes.size());
  for (size_t p = 0; p < sizes.size(); ++p)
    shares[p] = tokens.empty()
                    ? weights[p]
                    : weights[p] * static_cast<double>(sizes[p]) / static_cast<double>(tokens[p]);
  const double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  for (double& s : shares) s /= total;
  return shares;
}

Result<std::shared_ptr<const GlobalOrder>> make_mixture(const OrderInput& input,
                                                        const Params& params) {
  const std::vector<double>& weights = params.reals("weights");
  const size_t n_parts = input.parts.size();
  if (weights.size() != n_parts)
    return invalid_argument(
        fmt::format("order 'mixture': {} weights for {} sources", weights.size(), n_parts));
  std::vector<int64_t> sizes;
  for (size_t p = 0; p < n_parts; ++p) {
    sizes.push_back(std::accumulate(input.parts[p].begin(), input.parts[p].end(), int64_t{0}));
    if (sizes.back() <= 0)
      return invalid_argument(fmt::format("order 'mixture': source {} has no records", p));
  }
  std::vector<int64_t> tokens;
  if (params.choice("share_of") == "tokens") {
    for (size_t p = 0; p < n_parts; ++p) {
      const int64_t t = p < input.part_tokens.size() ? input.part_tokens[p] : 0;
      if (t <= 0)
        return invalid_argument(fmt::format(
            "order 'mixture': share_of=tokens, but source {} is not a token source", p));
      tokens.push_back(t);
    }
  }
  // The schedule: segment k + 1 from sample change_at[k], its weights later_weights' k-th row.
  const std::vector<double>& change_at = params.reals("change_at");
  const std::vector<double>& later = params.reals("later_weights");
  if (later.size() != change_at.size() * n_parts)
    return invalid_argument(fmt::format(
        "order 'mixture': later_weights holds {} weights, not {} ({} changes x {} sources)",
        later.size(), change_at.size() * n_parts, change_at.size(), n_parts));
  std::vector<int64_t> starts = {0};
  std::vector<std::vector<double>> shares = {sample_shares(weights.data(), sizes, tokens)};
  for (size_t k = 0; k < change_at.size(); ++k) {
    const double at = change_at[k];
    if (!(at == std::floor(at) && at > static_cast<double>(starts.back()) && at < 0x1p62))
      return invalid_argument(fmt::format(
          "order 'mixture': change_at[{}] = {} is not a whole sample after the one before ({})", k,
          at, starts.back()));
    starts.push_back(static_cast<int64_t>(at));
    shares.push_back(sample_shares(later.data() + k * n_parts, sizes, tokens));
  }
  // The epoch: as given, or until the first source is spent (each part's records over its
  // first share, the least), or every source (the most).
  int64_t n = params.integer("samples_per_epoch");
  const char* why = "samples_per_epoch";
  if (n == 0) {
    why = params.choice("until") == "first" ? "until=first, by the weights"
                                            : "until=all, by the weights";
    const bool first = params.choice("until") == "first";
    double bound = first ? INFINITY : 0;
    for (size_t p = 0; p < sizes.size(); ++p) {
      const double spent = static_cast<double>(sizes[p]) / shares[0][p];
      bound = first ? std::min(bound, std::floor(spent)) : std::max(bound, std::ceil(spent));
    }
    if (!(bound <= 1099511627776.0))
      return invalid_argument("order 'mixture': an epoch of more than 2^40 samples");
    n = std::max<int64_t>(1, static_cast<int64_t>(bound));
  }
  // Each epoch's order is made whole: the order and interleave()'s three vectors, 8 bytes a
  // sample each. One over half the machine's memory would fail to allocate or be killed.
  const double order_bytes = 32.0 * static_cast<double>(n);
  const double memory = static_cast<double>(machine_memory_bytes());
  if (memory > 0 && order_bytes > memory / 2)
    return invalid_argument(fmt::format(
        "order 'mixture': an epoch of {} samples ({}) takes {:.1f} GB of memory to order, more "
        "than half of this machine's {:.1f} GB: give {}",
        n, why, order_bytes / 1e9, memory / 1e9,
        params.integer("samples_per_epoch") > 0 ? "a smaller samples_per_epoch"
                                                : "samples_per_epoch, or weights less uneven"));
  return std::shared_ptr<const GlobalOrder>(std::make_shared<Mixture>(
      std::move(sizes), n, std::move(starts), std::move(shares), input.seed, input.shuffle));
}

}  // namespace

OrderSpec mixture() {
  OrderSpec spec;
  spec.name = "mixture";
  spec.doc =
      "sources mixed by weight, the weights changing at given samples: each epoch (and each "
      "piece of it between changes) exactly its share of each, interleaved; each source through "
      "its own epochs";
  spec.params = {
      ParamSpec::reals("weights", {1.0}, "each source's share (any positive numbers, normalised)",
                       1, ParamSpec::kAnyCount)
          .above(0),
      ParamSpec::integer("samples_per_epoch", 0,
                         "samples per epoch; 0: until the first (or every) source is spent "
                         "(by the first weights)")
          .in(0, 1099511627776.0),  // 2^40
      ParamSpec::choice("until", "first", {"first", "all"},
                        "without samples_per_epoch, the epoch ends when the first source is "
                        "spent, or when all are (the others cycling through their epochs)"),
      ParamSpec::reals("change_at", {},
                       "the run's samples (epoch x N + position) where the "
                       "weights change, increasing",
                       0, ParamSpec::kAnyCount),
      ParamSpec::reals("later_weights", {},
                       "the weights from each change on, one row of a "
                       "weight per source each, in one list",
                       0, ParamSpec::kAnyCount)
          .above(0),
      ParamSpec::choice("share_of", "samples", {"samples", "tokens"},
                        "the weights as shares of samples, or of tokens (token sources: each "
                        "weight over the source's mean tokens per sample)"),
  };
  spec.make = make_mixture;
  return spec;
}

}  // namespace stoker::orders
