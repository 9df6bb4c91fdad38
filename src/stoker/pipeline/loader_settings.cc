#include "stoker/pipeline/loader_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>

#include "stoker/util/machine.h"

namespace stoker {
namespace {

// `text` as a whole number (decimal digits, optional sign); nullopt beyond long long.
std::optional<long long> parse_whole_number(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) return std::nullopt;
  return value;
}

// A table entry's parse: `parse_value`'s value of the text into `settings.*field`.
template <auto field, auto parse_value>
Status parse_into(const std::string& text, LoaderSettings& settings) {
  STOKER_ASSIGN_OR_RETURN(settings.*field, parse_value(text));
  return Status::ok();
}

// The prefetch depth: a whole number (kAutoPrefetch or >= 1 is check()'s).
Result<int> parse_prefetch(const std::string& text) {
  const std::optional<long long> value = parse_whole_number(text);
  if (!value || *value < INT_MIN || *value > INT_MAX)
    return invalid_argument("prefetch: '" + text + "' is not a whole number");
  return static_cast<int>(*value);
}

// Repeats of a sample: a whole number (its range is check()'s).
Result<int64_t> parse_ra_reps(const std::string& text) {
  const std::optional<long long> value = parse_whole_number(text);
  if (!value) return invalid_argument("ra_reps: '" + text + "' is not a whole number");
  return static_cast<int64_t>(*value);
}

// -1 (one per core, as the command line spells it), "auto" or a whole number.
Result<WorkerCount> parse_workers(const std::string& text) {
  if (text == "-1") return WorkerCount::per_core();
  return WorkerCount::parse(text);
}

}  // namespace

std::string to_string(VerifyPolicy policy) { return kVerifyPolicyNames.name(policy); }

Result<VerifyPolicy> parse_verify_policy(const std::string& name) {
  if (std::optional<VerifyPolicy> policy = kVerifyPolicyNames.find(name)) return *policy;
  return invalid_argument("verify policy '" + name + "' is not one of " +
                          kVerifyPolicyNames.joined());
}

Result<ErrorPolicy> parse_error_policy(const std::string& name) {
  if (std::optional<ErrorPolicy> policy = kErrorPolicyNames.find(name)) return *policy;
  return invalid_argument("on_error '" + name + "' is not one of " + kErrorPolicyNames.joined());
}

Result<int64_t> parse_shuffle_window(const std::string& text) {
  if (text == "all") return kShuffleAll;
  const std::optional<long long> value = parse_whole_number(text);
  if (!value)
    return invalid_argument("shuffle_window: '" + text + "' is not a whole number or all");
  return static_cast<int64_t>(*value);
}

std::string shuffle_window_text(int64_t window) {
  return window == kShuffleAll ? "all" : std::to_string(window);
}

Result<WorkerCount> WorkerCount::parse(const std::string& text) {
  if (text == "auto") return tuned();
  const std::optional<long long> value = parse_whole_number(text);
  if (!value || *value < INT_MIN || *value > INT_MAX)
    return invalid_argument("workers: '" + text + "' is not a whole number or auto");
  return WorkerCount(static_cast<int>(*value));
}

int WorkerCount::threads() const {
  switch (mode_) {
    case Mode::kFixed:
      return count_;
    case Mode::kPerCore:
      return auto_workers();
    case Mode::kTuned:
      break;
  }
  return 0;
}

std::string WorkerCount::to_string() const {
  switch (mode_) {
    case Mode::kFixed:
      return std::to_string(count_);
    case Mode::kPerCore:
      return "per-core";
    case Mode::kTuned:
      break;
  }
  return "auto";
}

Status LoaderSettings::check() const {
  if (workers.mode() == WorkerCount::Mode::kFixed) {
    const int n = workers.threads();
    if (n > kMaxWorkers)
      return invalid_argument(fmt::format("workers must be at most {}, not {}", kMaxWorkers, n));
    if (n < 0) return invalid_argument(fmt::format("workers must be at least 0, not {}", n));
  }
  if (tune.max_workers < 0 || tune.max_workers > kMaxWorkers || tune.start_workers < 0 ||
      tune.start_workers > kMaxWorkers)
    return invalid_argument(
        fmt::format("tuning budget: workers must be 0 (auto) or up to {}", kMaxWorkers));
  if (prefetch > kMaxPrefetch)
    return invalid_argument(
        fmt::format("prefetch must be at most {}, not {}", kMaxPrefetch, prefetch));
  if (prefetch < 1 && prefetch != kAutoPrefetch)
    return invalid_argument(fmt::format("prefetch must be at least 1{}, not {}",
                                        prefetch < 0 ? " (or -1: auto)" : "", prefetch));
  if (shuffle_window < 0 || shuffle_window > kMaxShuffleWindow)
    return invalid_argument(
        fmt::format("shuffle_window must be all or a number of shards from 1 to {}, not {}",
                    kMaxShuffleWindow, shuffle_window));
  if (ra_reps < 1 || ra_reps > kMaxRaReps)
    return invalid_argument(
        fmt::format("ra_reps must be from 1 to {}, not {}", kMaxRaReps, ra_reps));
  return Status::ok();
}

const std::vector<LoaderSettingDescription>& loader_setting_descriptions() {
  static const std::vector<LoaderSettingDescription> settings = {
      {"workers",
       "Loader worker threads (0: build batches inline; auto: tuned during about the first 100 "
       "steps, from 1 up to the machine's cores)",
       parse_into<&LoaderSettings::workers, parse_workers>,
       [](const LoaderSettings& s) {
         return s.workers.mode() == WorkerCount::Mode::kPerCore ? "-1" : s.workers.to_string();
       },
       /*choices=*/{}, /*word=*/"auto", /*minimum=*/-1, /*maximum=*/kMaxWorkers,
       /*zero_refused=*/""},
      {"shuffle_window",
       "Shuffle within a window of N shards at a time (shards permuted each epoch: locality for "
       "streamed data), or all: the whole dataset",
       parse_into<&LoaderSettings::shuffle_window, parse_shuffle_window>,
       [](const LoaderSettings& s) { return shuffle_window_text(s.shuffle_window); },
       /*choices=*/{}, /*word=*/"all", /*minimum=*/1, /*maximum=*/kMaxShuffleWindow,
       /*zero_refused=*/""},
      {"ra_reps",
       "Repeated augmentation (the references' RASampler): each sample N times in a row of the "
       "shuffled order, dealt to different ranks, each with its own augmentation; an epoch keeps "
       "the dataset's length (N/ra_reps distinct samples). Training only",
       parse_into<&LoaderSettings::ra_reps, parse_ra_reps>,
       [](const LoaderSettings& s) { return std::to_string(s.ra_reps); }, /*choices=*/{},
       /*word=*/"", /*minimum=*/1, /*maximum=*/kMaxRaReps, /*zero_refused=*/""},
      {"prefetch", "Batches in flight (-1 = auto: 16 MiB, 4 to 64)",
       parse_into<&LoaderSettings::prefetch, parse_prefetch>,
       [](const LoaderSettings& s) { return std::to_string(s.prefetch); }, /*choices=*/{},
       /*word=*/"", /*minimum=*/kAutoPrefetch, /*maximum=*/kMaxPrefetch,
       /*zero_refused=*/"must be -1 (auto) or at least 1"},
      {"verify", "Record checksums: always, once or off (once: at the first read)",
       parse_into<&LoaderSettings::verify, parse_verify_policy>,
       [](const LoaderSettings& s) { return to_string(s.verify); },
       /*choices=*/kVerifyPolicyNames.names(), /*word=*/"", /*minimum=*/0, /*maximum=*/0,
       /*zero_refused=*/""},
      // Python's only (no help): the commands keep the default, raise.
      {"on_error", "", parse_into<&LoaderSettings::on_error, parse_error_policy>,
       [](const LoaderSettings& s) { return std::string(kErrorPolicyNames.name(s.on_error)); },
       /*choices=*/kErrorPolicyNames.names(), /*word=*/"", /*minimum=*/0, /*maximum=*/0,
       /*zero_refused=*/""},
  };
  return settings;
}

const LoaderSettingDescription* find_loader_setting(std::string_view name) {
  const std::vector<LoaderSettingDescription>& table = loader_setting_descriptions();
  const auto found = std::find_if(table.begin(), table.end(),
                                  [name](const auto& setting) { return setting.name == name; });
  return found == table.end() ? nullptr : &*found;
}

int auto_workers() { return std::max(1, machine_cores() - 1); }

int auto_prefetch(size_t batch_bytes) {
  constexpr size_t kBudget = size_t{16} << 20;
  return static_cast<int>(std::clamp<size_t>(kBudget / std::max<size_t>(batch_bytes, 1), 4, 64));
}

}  // namespace stoker
