#pragma once
// RetryPolicy: whether a failed HTTP attempt is tried again, and after how long
// (docs/REMOTE-DESIGN.md, section 4): transport failures that a new connection may cure and the
// statuses a busy or restarting server sends are retried with exponential backoff and full
// jitter (a delay drawn uniformly from [0, min(max_delay, first_delay * 2^(attempt - 1))]),
// within an attempt count and a time budget per transfer; everything else is final. Pure: the
// clock and the jitter are injected. Thread-compatible.

#include <curl/curl.h>

#include <functional>
#include <optional>
#include <string>

#include "stoker/util/status.h"

namespace stoker::remote {

struct RetryLimits {
  int max_attempts = 10;       // attempts per transfer, the first included
  double first_delay_s = 0.2;  // the backoff's first cap
  double max_delay_s = 10;     // the cap it doubles up to
  double budget_s = 120;       // no retry would start later than this after the first attempt
};

// The variable that sets how long a run retries a failing transfer, in seconds.
inline constexpr const char* kRetrySecondsVariable = "STOKER_RETRY_SECONDS";

// The limits a run uses: the defaults when `retry_seconds` (the variable's value) is unset or
// empty; else retries for up to that many seconds (a number >= 0), however many attempts that
// takes (a server restarting for minutes is waited for; 0 never retries). kInvalidArgument, one
// line naming the variable, for another value.
Result<RetryLimits> retry_limits_for(const std::optional<std::string>& retry_seconds);

class RetryPolicy {
 public:
  using Clock = std::function<double()>;   // seconds, monotonic
  using Jitter = std::function<double()>;  // uniform in [0, 1)

  RetryPolicy(RetryLimits limits, Clock now, Jitter jitter)
      : limits_(limits), now_(std::move(now)), jitter_(std::move(jitter)) {}

  // Whether an attempt that ended with `code` and (when the transfer got a response)
  // `http_status` may succeed if tried again: CURLE_COULDNT_CONNECT, RECV_ERROR, SEND_ERROR,
  // PARTIAL_FILE, GOT_NOTHING, OPERATION_TIMEDOUT; HTTP 408, 429, 500, 502, 503, 504.
  static bool retryable(CURLcode code, long http_status);

  // After attempt number `attempt` (1 for the first) of a transfer whose first attempt started
  // at `started_s` failed with (`code`, `http_status`): the delay before the next attempt, or
  // nullopt to give up (not retryable, attempts spent, or the delay would end past the budget).
  std::optional<double> delay_before_retry(int attempt, double started_s, CURLcode code,
                                           long http_status) const;

  const RetryLimits& limits() const { return limits_; }
  double now() const { return now_(); }

 private:
  RetryLimits limits_;
  Clock now_;
  Jitter jitter_;
};

}  // namespace stoker::remote
