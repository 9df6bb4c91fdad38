#include "stoker/net/retry_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>

namespace stoker::remote {

Result<RetryLimits> retry_limits_for(const std::optional<std::string>& retry_seconds) {
  RetryLimits limits;
  if (!retry_seconds || retry_seconds->empty()) return limits;
  char* end = nullptr;
  const double seconds = std::strtod(retry_seconds->c_str(), &end);
  if (end != retry_seconds->c_str() + retry_seconds->size() || !std::isfinite(seconds) ||
      seconds < 0) {
    return invalid_argument(
        fmt::format("{}={}: not a number of seconds >= 0", kRetrySecondsVariable, *retry_seconds));
  }
  limits.max_attempts = seconds > 0 ? INT_MAX : 1;
  limits.budget_s = seconds;
  return limits;
}

bool RetryPolicy::retryable(CURLcode code, long http_status) {
  switch (code) {
    case CURLE_OK:
      break;
    case CURLE_COULDNT_CONNECT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
      return true;
    default:
      return false;
  }
  switch (http_status) {
    case 408:
    case 429:
    case 500:
    case 502:
    case 503:
    case 504:
      return true;
    default:
      return false;
  }
}

std::optional<double> RetryPolicy::delay_before_retry(int attempt, double started_s, CURLcode code,
                                                      long http_status) const {
  if (!retryable(code, http_status) || attempt >= limits_.max_attempts) return std::nullopt;
  const double cap = std::min(limits_.max_delay_s,
                              limits_.first_delay_s * std::ldexp(1.0, std::min(attempt - 1, 60)));
  const double delay = cap * std::clamp(jitter_(), 0.0, 1.0);
  if (now_() + delay - started_s > limits_.budget_s) return std::nullopt;
  return delay;
}

}  // namespace stoker::remote
