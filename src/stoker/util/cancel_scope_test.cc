#include "stoker/util/cancel_scope.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

namespace stoker {
namespace {

TEST(CancelScope, TheInnermostScopesCancellationIsInScopeUntilItEnds) {
  EXPECT_FALSE(cancellation_in_scope());  // outside any scope: none
  bool outer_cancelled = false, inner_cancelled = true;
  const std::function<bool()> outer = [&] { return outer_cancelled; };
  const std::function<bool()> inner = [&] { return inner_cancelled; };
  {
    CancelScope a(&outer);
    EXPECT_FALSE(cancellation_in_scope()());
    outer_cancelled = true;
    EXPECT_TRUE(cancellation_in_scope()());
    {
      CancelScope b(&inner);
      inner_cancelled = false;
      EXPECT_FALSE(cancellation_in_scope()());
      {
        CancelScope none(nullptr);
        EXPECT_FALSE(cancellation_in_scope());
      }
      EXPECT_FALSE(cancellation_in_scope()());
    }
    EXPECT_TRUE(cancellation_in_scope()());  // the outer one again
  }
  EXPECT_FALSE(cancellation_in_scope());
}

TEST(CancelScope, AScopeIsItsThreadsAlone) {
  const std::function<bool()> always = [] { return true; };
  CancelScope scope(&always);
  bool other_thread_has_one = true;
  std::thread([&] { other_thread_has_one = static_cast<bool>(cancellation_in_scope()); }).join();
  EXPECT_FALSE(other_thread_has_one);
  EXPECT_TRUE(cancellation_in_scope()());
}

}  // namespace
}  // namespace stoker
