#include "stoker/net/retry_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace stoker::remote {
namespace {

TEST(RetryPolicy, RetriesTransportFailuresAndBusyStatusesOnly) {
  for (CURLcode code : {CURLE_COULDNT_CONNECT, CURLE_RECV_ERROR, CURLE_SEND_ERROR,
                        CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_OPERATION_TIMEDOUT}) {
    EXPECT_TRUE(RetryPolicy::retryable(code, 0)) << code;
  }
  for (CURLcode code :
       {CURLE_OK, CURLE_COULDNT_RESOLVE_HOST, CURLE_URL_MALFORMAT, CURLE_ABORTED_BY_CALLBACK,
        CURLE_WRITE_ERROR, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION}) {
    EXPECT_FALSE(RetryPolicy::retryable(code, 0)) << code;
  }
  for (long status : {408, 429, 500, 502, 503, 504}) {
    EXPECT_TRUE(RetryPolicy::retryable(CURLE_OK, status)) << status;
  }
  for (long status : {200, 206, 304, 400, 401, 403, 404, 412, 416, 501, 505}) {
    EXPECT_FALSE(RetryPolicy::retryable(CURLE_OK, status)) << status;
  }
}

TEST(RetryPolicy, FullJitterUnderADoublingCap) {
  double jitter = 1.0;
  const RetryPolicy policy(
      {10, 0.2, 10, 1e9}, [] { return 0.0; }, [&] { return jitter; });
  const double caps[] = {0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10, 10, 10};
  for (int attempt = 1; attempt <= 9; ++attempt) {
    jitter = 0.999999;
    EXPECT_NEAR(*policy.delay_before_retry(attempt, 0, CURLE_OK, 503), caps[attempt - 1], 1e-5);
    jitter = 0.0;
    EXPECT_EQ(*policy.delay_before_retry(attempt, 0, CURLE_RECV_ERROR, 0), 0.0);
    jitter = 0.5;
    EXPECT_NEAR(*policy.delay_before_retry(attempt, 0, CURLE_OK, 503), caps[attempt - 1] / 2, 1e-9);
  }
  EXPECT_FALSE(policy.delay_before_retry(10, 0, CURLE_OK, 503)) << "10 attempts at most";
  EXPECT_FALSE(policy.delay_before_retry(1, 0, CURLE_OK, 404)) << "final status";
}

TEST(RetryPolicy, GivesUpWhenTheDelayWouldEndPastTheBudget) {
  double now = 0;
  const RetryPolicy policy(
      {100, 1, 1, 10}, [&] { return now; }, [] { return 0.5; });
  now = 9.4;
  EXPECT_EQ(*policy.delay_before_retry(3, 0, CURLE_OK, 500), 0.5);
  now = 9.6;
  EXPECT_FALSE(policy.delay_before_retry(3, 0, CURLE_OK, 500));
  EXPECT_EQ(*policy.delay_before_retry(3, 5, CURLE_OK, 500), 0.5) << "budget from the start";
}

// Property: for any attempt, clock and jitter, a delay is within [0, cap] and never ends past
// the budget; out-of-range jitter is clamped.
TEST(RetryPolicy, DelaysStayWithinCapAndBudget) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> uniform(-0.5, 1.5);
  double now = 0, jitter = 0;
  const RetryLimits limits{8, 0.2, 10, 120};
  const RetryPolicy policy(
      limits, [&] { return now; }, [&] { return jitter; });
  for (int trial = 0; trial < 10000; ++trial) {
    const int attempt = 1 + rng() % 12;
    now = uniform(rng) * 150;
    jitter = uniform(rng);
    const std::optional<double> delay = policy.delay_before_retry(attempt, 0, CURLE_OK, 503);
    const double cap = std::min(10.0, 0.2 * (1 << std::min(attempt - 1, 20)));
    const double expected = cap * std::clamp(jitter, 0.0, 1.0);
    if (attempt >= limits.max_attempts || now + expected > limits.budget_s) {
      EXPECT_FALSE(delay) << attempt << " " << now;
      continue;
    }
    ASSERT_TRUE(delay) << attempt << " " << now;
    EXPECT_DOUBLE_EQ(*delay, expected);
    EXPECT_GE(*delay, 0);
    EXPECT_LE(*delay, cap);
    EXPECT_LE(now + *delay, limits.budget_s + 1e-9);
  }
}

// STOKER_RETRY_SECONDS: unset or empty keeps the defaults; S retries for S seconds whatever the
// attempts; 0 never retries; anything else is one line naming the variable.
TEST(RetryPolicy, RetrySecondsFromTheEnvironment) {
  for (const std::optional<std::string>& unset : {std::optional<std::string>(), {""}}) {
    const RetryLimits limits = retry_limits_for(unset).value_or_throw();
    EXPECT_EQ(limits.max_attempts, RetryLimits().max_attempts);
    EXPECT_EQ(limits.budget_s, RetryLimits().budget_s);
  }
  const RetryLimits long_wait = retry_limits_for("600").value_or_throw();
  EXPECT_EQ(long_wait.budget_s, 600);
  EXPECT_GT(long_wait.max_attempts, 1000);
  const RetryPolicy policy(
      long_wait, [] { return 100.0; }, [] { return 1.0; });
  EXPECT_TRUE(policy.delay_before_retry(50, 0, CURLE_COULDNT_CONNECT, 0)) << "attempts unbounded";
  EXPECT_EQ(retry_limits_for("0").value_or_throw().max_attempts, 1);
  EXPECT_EQ(retry_limits_for("1.5").value_or_throw().budget_s, 1.5);
  for (const char* bad : {"-1", "abc", "2s", "nan", "inf"}) {
    const Status status = retry_limits_for(bad).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(status.message(),
              std::string("STOKER_RETRY_SECONDS=") + bad + ": not a number of seconds >= 0");
  }
}

}  // namespace
}  // namespace stoker::remote
