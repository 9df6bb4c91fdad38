#include "stoker/pipeline/loader_settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <optional>

#include "stoker/util/machine.h"
#include "stoker/util/utf8.h"

namespace stoker {
namespace {

// `value` (a whole number) as an int setting: one beyond int's range is named by its bounds.
Result<int> int_setting(const ParamSpec& spec, const ParamValue& value) {
  const int64_t number = std::get<int64_t>(value);
  if (number > INT_MAX)
    return invalid_argument(
        fmt::format("{} must be at most {}, not {}", spec.name, *spec.max, number));
  if (number < INT_MIN)
    return invalid_argument(
        fmt::format("{} must be at least {}, not {}", spec.name, *spec.min, number));
  return static_cast<int>(number);
}

// -1 (one per core, as the command line spells it), "auto" (tuned) or a fixed count.
Status set_workers(const ParamSpec& spec, const ParamValue& value, LoaderSettings& settings) {
  if (std::holds_alternative<std::string>(value)) {
    settings.workers = WorkerCount::tuned();
    return Status::ok();
  }
  STOKER_ASSIGN_OR_RETURN(const int count, int_setting(spec, value));
  settings.workers = count == -1 ? WorkerCount::per_core() : WorkerCount(count);
  return Status::ok();
}

Status set_prefetch(const ParamSpec& spec, const ParamValue& value, LoaderSettings& settings) {
  STOKER_ASSIGN_OR_RETURN(settings.prefetch, int_setting(spec, value));
  return Status::ok();
}

Status set_shuffle_window(const ParamSpec&, const ParamValue& value, LoaderSettings& settings) {
  settings.shuffle_window =
      std::holds_alternative<std::string>(value) ? kShuffleAll : std::get<int64_t>(value);
  return Status::ok();
}

Status set_ra_reps(const ParamSpec&, const ParamValue& value, LoaderSettings& settings) {
  settings.ra_reps = std::get<int64_t>(value);
  return Status::ok();
}

Status set_verify(const ParamSpec&, const ParamValue& value, LoaderSettings& settings) {
  settings.verify = *kVerifyPolicyNames.find(std::get<std::string>(value));
  return Status::ok();
}

Status set_on_error(const ParamSpec&, const ParamValue& value, LoaderSettings& settings) {
  settings.on_error = *kErrorPolicyNames.find(std::get<std::string>(value));
  return Status::ok();
}

}  // namespace

std::string to_string(VerifyPolicy policy) { return kVerifyPolicyNames.name(policy); }

std::string shuffle_window_text(int64_t window) {
  return window == kShuffleAll ? "all" : std::to_string(window);
}

Status parse_loader_setting(const LoaderSettingDescription& setting, const std::string& text,
                            LoaderSettings& settings) {
  const ParamSpec& spec = setting.spec;
  const std::optional<ParamValue> value = parse_param_text(spec, text);
  if (spec.type == ParamType::kChoice && !(value && param_value(spec, *value)))
    return invalid_argument(fmt::format("{} '{}' is not one of {}", spec.name, printable(text),
                                        fmt::join(spec.choices, ", ")));
  if (!value)
    return invalid_argument(fmt::format("{}: '{}' is not a whole number{}", spec.name,
                                        printable(text),
                                        spec.word.empty() ? "" : " or " + spec.word));
  return setting.set(spec, *value, settings);
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
  const LoaderSettings defaults;
  static const std::vector<LoaderSettingDescription> settings = {
      {ParamSpec::integer("workers", -1,
                          "Loader worker threads (0: build batches inline; auto: tuned during "
                          "about the first 100 steps, from 1 up to the machine's cores)")
           .in(-1, kMaxWorkers)
           .or_word("auto"),
       set_workers,
       [](const LoaderSettings& s) {
         return s.workers.mode() == WorkerCount::Mode::kPerCore ? "-1" : s.workers.to_string();
       },
       /*zero_refused=*/""},
      {ParamSpec::integer("shuffle_window", 0,
                          "Shuffle within a window of N shards at a time (shards permuted each "
                          "epoch: locality for streamed data), or all: the whole dataset")
           .in(1, kMaxShuffleWindow)
           .or_word("all")
           .defaulting_to(std::string("all")),
       set_shuffle_window,
       [](const LoaderSettings& s) { return shuffle_window_text(s.shuffle_window); },
       /*zero_refused=*/""},
      {ParamSpec::integer("ra_reps", defaults.ra_reps,
                          "Repeated augmentation (the references' RASampler): each sample N times "
                          "in a row of the shuffled order, dealt to different ranks, each with its "
                          "own augmentation; an epoch keeps the dataset's length (N/ra_reps "
                          "distinct samples). Training only")
           .in(1, kMaxRaReps),
       set_ra_reps, [](const LoaderSettings& s) { return std::to_string(s.ra_reps); },
       /*zero_refused=*/""},
      {ParamSpec::integer("prefetch", kAutoPrefetch,
                          "Batches in flight (-1 = auto: 16 MiB, 4 to 64)")
           .in(kAutoPrefetch, kMaxPrefetch),
       set_prefetch, [](const LoaderSettings& s) { return std::to_string(s.prefetch); },
       /*zero_refused=*/"must be -1 (auto) or at least 1"},
      {ParamSpec::choice("verify", to_string(defaults.verify), kVerifyPolicyNames.names(),
                         "Record checksums: always, once or off (once: at the first read)"),
       set_verify, [](const LoaderSettings& s) { return to_string(s.verify); },
       /*zero_refused=*/""},
      // Python's only (no help): the commands keep the default, raise.
      {ParamSpec::choice("on_error", std::string(kErrorPolicyNames.name(defaults.on_error)),
                         kErrorPolicyNames.names(), ""),
       set_on_error,
       [](const LoaderSettings& s) { return std::string(kErrorPolicyNames.name(s.on_error)); },
       /*zero_refused=*/""},
  };
  return settings;
}

const LoaderSettingDescription* find_loader_setting(std::string_view name) {
  const std::vector<LoaderSettingDescription>& table = loader_setting_descriptions();
  const auto found = std::find_if(table.begin(), table.end(), [name](const auto& setting) {
    return setting.spec.name == name;
  });
  return found == table.end() ? nullptr : &*found;
}

int auto_workers() { return std::max(1, machine_cores() - 1); }

int auto_prefetch(size_t batch_bytes) {
  constexpr size_t kBudget = size_t{16} << 20;
  return static_cast<int>(std::clamp<size_t>(kBudget / std::max<size_t>(batch_bytes, 1), 4, 64));
}

int prefetch_within_memory(size_t batch_bytes, uint64_t memory) {
  if (memory == 0) return kMaxPrefetch;
  const uint64_t buffers = memory / 2 / std::max<uint64_t>(batch_bytes, 1);
  return static_cast<int>(std::clamp<uint64_t>(buffers, 3, uint64_t{kMaxPrefetch} + 2) - 2);
}

}  // namespace stoker
