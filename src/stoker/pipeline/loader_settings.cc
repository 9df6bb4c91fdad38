#include "stoker/pipeline/loader_settings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>

#include "stoker/util/machine.h"

namespace stoker {

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
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(begin, &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    return invalid_argument("shuffle_window: '" + text + "' is not a whole number or all");
  return static_cast<int64_t>(value);
}

std::string shuffle_window_text(int64_t window) {
  return window == kShuffleAll ? "all" : std::to_string(window);
}

Result<WorkerCount> WorkerCount::parse(const std::string& text) {
  if (text == "auto") return tuned();
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(begin, &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || value < INT_MIN || value > INT_MAX)
    return invalid_argument("workers: '" + text + "' is not a whole number or auto");
  return WorkerCount(static_cast<int>(value));
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
  return Status::ok();
}

int auto_workers() { return std::max(1, machine_cores() - 1); }

int auto_prefetch(size_t batch_bytes) {
  constexpr size_t kBudget = size_t{16} << 20;
  return static_cast<int>(std::clamp<size_t>(kBudget / std::max<size_t>(batch_bytes, 1), 4, 64));
}

}  // namespace stoker
