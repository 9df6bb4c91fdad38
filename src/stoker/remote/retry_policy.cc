#include "stoker/remote/retry_policy.h"

#include <algorithm>
#include <cmath>

namespace stoker::remote {

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
