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
Result<VerifyPolicy> parse_verify_policy(const std::string& name);
// The inverse of parse_verify_policy.
std::string to_string(VerifyPolicy policy);

// A shuffle window: "all" (kShuffleAll) or a whole number of shards (not yet checked).
Result<int64_t> parse_shuffle_window(const std::string& text);
// The inverse of parse_shuffle_window: "all" or the number.
std::string shuffle_window_text(int64_t window);

// What a bad sample does: kRaise fails its batch, kSkip drops and counts it.
enum class ErrorPolicy { kRaise, kSkip };

inline constexpr auto kErrorPolicyNames =
    enum_names<ErrorPolicy>({{ErrorPolicy::kRaise, "raise"}, {ErrorPolicy::kSkip, "skip"}});

// "raise" or "skip".
Result<ErrorPolicy> parse_error_policy(const std::string& name);

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
  // "auto" (tuned) or a whole number (fixed, not yet checked).
  static Result<WorkerCount> parse(const std::string& text);

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
  // The Python keyword; the command line's flag is --name, '_' spelt '-'.
  std::string_view name;
  // The flag's --help text; empty where the command line does not offer the setting.
  std::string_view help;
  // Sets the setting in `settings` from its text; a text of no form of the setting is refused
  // naming it ("workers: 'x' is not a whole number or auto"). The limits are check()'s.
  Status (*parse)(const std::string& text, LoaderSettings& settings);
  // The setting's text in `settings`, which parse takes back (the default's, for --help).
  std::string (*text)(const LoaderSettings& settings);
  // The forms of its text, which the command line checks: one of `choices` (an enum's names);
  // else `word` (when not empty) or a whole number in [minimum, maximum], 0 refused where
  // `zero_refused` says why ("must be -1 (auto) or at least 1").
  std::vector<std::string> choices;
  std::string_view word;
  int64_t minimum = 0;
  int64_t maximum = 0;
  std::string_view zero_refused;
};

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

}  // namespace stoker
