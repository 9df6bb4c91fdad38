#pragma once
// LoaderSettings: how a loader runs, as opposed to what it delivers — its worker count (fixed,
// one per core, or tuned), prefetch depth, checksum and error policies and tuning budget — and
// the settings of its order that every command offers alike, the shuffle window and repeated
// augmentation; with each
// limit, default, spelling and check declared once, and each setting described as data
// (loader_setting_descriptions()). Below both the loader front end (loader_core.h, whose
// LoaderOptions extends it) and the engine; the trainer embeds it (TrainerOptions::loader), the
// CLI binds every setting with one loop (cli/loader_settings_options.h) and so does Python
// (python/loader_binding.cc, which also exports every limit).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/pipeline/sampler.h"
#include "stoker/util/enum_names.h"
#include "stoker/util/param_spec.h"
#include "stoker/util/status.h"

namespace stoker {

// Limits (beyond them a machine of this kind cannot help).
inline constexpr int kMaxWorkers = 1024;
inline constexpr int kMaxPrefetch = 4096;
// Epochs are numbered [0, kMaxEpoch]: the engine plans epoch + 1 ahead, which stays an int64.
inline constexpr int64_t kMaxEpoch = int64_t{1} << 62;
// Largest batch buffer a loader allocates (all fields of one batch).
inline constexpr size_t kMaxBatchBytes = size_t{16} << 30;
// The widest shuffle window, in shards (LoaderSettings::shuffle_window).
inline constexpr int64_t kMaxShuffleWindow = int64_t{1} << 20;
// The most repeats of a sample in an epoch's order (LoaderSettings::ra_reps).
inline constexpr int64_t kMaxRaReps = 256;
// LoaderSettings::prefetch: as many batches as fit in 16 MiB, 4 to 64 (auto_prefetch).
inline constexpr int kAutoPrefetch = -1;

// When records' checksums are checked.
enum class VerifyPolicy {
  kAlways,  // every read
  kOnce,    // the first read of each record in this loader (later epochs trust the mmap)
  kOff,     // never (`stoker verify` still checks everything)
};

inline constexpr auto kVerifyPolicyNames =
    enum_names<VerifyPolicy>({{VerifyPolicy::kAlways, "always"},
                              {VerifyPolicy::kOnce, "once"},
                              {VerifyPolicy::kOff, "off"}});

// "always", "once" or "off".
std::string to_string(VerifyPolicy policy);

// A shuffle window as its setting's text: "all" (kShuffleAll) or the number of shards.
std::string shuffle_window_text(int64_t window);

// What a bad sample does: kRaise fails its batch, kSkip drops and counts it.
enum class ErrorPolicy { kRaise, kSkip };

inline constexpr auto kErrorPolicyNames =
    enum_names<ErrorPolicy>({{ErrorPolicy::kRaise, "raise"}, {ErrorPolicy::kSkip, "skip"}});

// How many threads build batches. Spelt "auto" (tuned) or a whole number (fixed) on the command
// line and in Python, where one per core is the default (None in Python).
class WorkerCount {
 public:
  enum class Mode {
    kFixed,    // count() threads; 0 builds batches inline on the consumer's thread
    kPerCore,  // auto_workers(): one per core beyond the consumer's
    kTuned,    // tuned while the consumer takes batches (worker_tuner.h), within TuneBudget
  };
  // Fixed; implicit, so that `options.workers = 4` reads as it means.
  constexpr WorkerCount(int fixed) : mode_(Mode::kFixed), count_(fixed) {}  // NOLINT
  static constexpr WorkerCount per_core() { return WorkerCount(Mode::kPerCore); }
  static constexpr WorkerCount tuned() { return WorkerCount(Mode::kTuned); }

  constexpr Mode mode() const { return mode_; }
  constexpr bool is_tuned() const { return mode_ == Mode::kTuned; }
  // The threads: fixed ones, or auto_workers() per core; 0 for a tuned count (its pool is sized
  // by TuneBudget::max_workers).
  int threads() const;
  // "auto" when tuned, "per-core", or the number.
  std::string to_string() const;
  constexpr bool operator==(const WorkerCount& o) const {
    return mode_ == o.mode_ && (mode_ != Mode::kFixed || count_ == o.count_);
  }
  constexpr bool operator!=(const WorkerCount& o) const { return !(*this == o); }

 private:
  constexpr explicit WorkerCount(Mode mode) : mode_(mode), count_(0) {}
  Mode mode_;
  int count_;
};

// The budgets and start of a tuned loader.
struct TuneBudget {
  int max_workers = 0;    // the CPU budget: the most workers; 0 = machine's cores
  int start_workers = 0;  // tried first; 0 = auto_workers() (within max_workers)
  // The memory budget of an auto prefetch: batches in flight take at most this many bytes (but
  // the depth is never below auto_prefetch's). A prefetch set by hand is not tuned.
  size_t max_prefetch_bytes = size_t{256} << 20;
};

struct LoaderSettings {
  WorkerCount workers = WorkerCount::per_core();
  // Batches built ahead of the consumer, >= 1, or kAutoPrefetch. A deeper window lets workers
  // sleep longer between wake-ups.
  int prefetch = kAutoPrefetch;
  VerifyPolicy verify = VerifyPolicy::kOnce;   // when record checksums are checked
  ErrorPolicy on_error = ErrorPolicy::kRaise;  // kSkip drops and counts bad samples
  TuneBudget tune;                             // with tuned workers
  // Shards the shuffled order draws from at a time (>= 1), or kShuffleAll: the global shuffle
  // (sampler.h). Shapes the order: a resume keeps it (LoaderState::shuffle_window).
  int64_t shuffle_window = kShuffleAll;
  // Repeated augmentation: each sample's repeats in a row of the order, in [1, kMaxRaReps]
  // (sampler.h; the references' RASampler, --ra-reps). Shapes the order: a resume keeps it
  // (LoaderState::ra_reps).
  int64_t ra_reps = 1;

  // The one check of these settings: a message naming the setting and its value for one out of
  // range ("workers must be at most 1024, not 2000").
  Status check() const;
};

// One setting of LoaderSettings as data, so that each front end binds every setting with one
// loop: the command line (cli/loader_settings_options.h: flag, --help, checks) and Python
// (python/loader_binding.cc: keyword, options in force). A new setting is its field above, its
// entry in loader_settings.cc's table and its keyword in python/stoker/loader.py.
struct LoaderSettingDescription {
  // The setting as a parameter (param_spec.h, the schema operations' parameters have too): its
  // name (the Python keyword; the command line's flag is --name, '_' spelt '-'), its help (the
  // flag's --help; empty where the command line does not offer it), its default, and its form:
  // a kChoice, or a kInt within [min, max] (check()'s limits) that may also take a word.
  ParamSpec spec;
  // Sets the setting in `settings` from a value of spec's form (a word as its text).
  // A whole number beyond the field's type is refused by spec's bounds.
  Status (*set)(const ParamSpec& spec, const ParamValue& value, LoaderSettings& settings);
  // The setting's text in `settings`, which parse_loader_setting takes back.
  std::string (*text)(const LoaderSettings& settings);
  // Why a kInt's 0 is refused although within [min, max] ("must be -1 (auto) or at least 1");
  // empty where 0 is taken.
  std::string_view zero_refused;
};

// Sets `setting` in `settings` from its text, read by the setting's spec (param_spec.h); a text
// of no form of the setting is refused naming it ("workers: 'x' is not a whole number or auto",
// "verify 'x' is not one of always, once, off"). The limits are check()'s.
Status parse_loader_setting(const LoaderSettingDescription& setting, const std::string& text,
                            LoaderSettings& settings);

// Every setting, in the order --help lists them.
const std::vector<LoaderSettingDescription>& loader_setting_descriptions();
// The setting called `name` in that table; nullptr where none is.
const LoaderSettingDescription* find_loader_setting(std::string_view name);

// Worker threads for WorkerCount::per_core(): one per core this process may run on beyond the
// consumer's (machine_cores(): its CPU affinity), at least 1.
int auto_workers();
// The prefetch depth kAutoPrefetch picks for batches of `batch_bytes`: as many as fit in 16 MiB,
// at least 4 and at most 64. Small batches get a deep window because a window-full worker
// sleeps until half of it is free, and each wake-up costs the consumer a futex call.
int auto_prefetch(size_t batch_bytes);
// The deepest prefetch whose batch buffers (the depth and two: the engine's window) of
// `batch_bytes` each take at most half of `memory` bytes, at least 1; kMaxPrefetch where
// `memory` is 0 (unknown). What an auto prefetch is held to: huge batches (long clips of large
// frames) get a shallow window, not a machine's memory.
int prefetch_within_memory(size_t batch_bytes, uint64_t memory);

}  // namespace stoker
