#include "stoker/util/park_on_thread_exit.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

namespace stoker {
namespace {

#if defined(__GLIBCXX__)
TEST(CallOrPark, AThreadEndedInsideTheCallParksInsteadOfUnwindingANoexceptFrame) {
  // Without call_or_park the forced unwind of pthread_exit crosses the noexcept lambda, and
  // std::terminate aborts this test. The thread stays parked until the process ends.
  auto parked = std::make_shared<std::promise<void>>();
  std::future<void> done = parked->get_future();
  std::thread([parked]() noexcept {
    call_or_park([] { pthread_exit(nullptr); },
                 [&parked] {
                   parked->set_value();
                   park_for_good();
                 });
  }).detach();
  done.get();
}
#endif

TEST(CallOrPark, ACallThatReturnsOrThrowsIsNotParked) {
  const auto park = [] { FAIL() << "parked"; };
  int calls = 0;
  call_or_park([&] { ++calls; }, park);
  EXPECT_EQ(calls, 1);
  EXPECT_THROW(call_or_park([] { throw std::runtime_error("failed"); }, park), std::runtime_error);
}

}  // namespace
}  // namespace stoker
