// WaitSignal (sync/wait_signal.h): the error it hands over, and whether the
// waiter slept, which tells the engine a woken frontend may have been moved;
// a waiter that spins while the workers progress, and only then.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>

#include "sync/wait_signal.h"

namespace depengine::detail {
namespace {

TEST(WaitSignal, ASignalSetBeforeTheWaitReturnsItsErrorWithoutSleeping) {
  WaitSignal signal;
  signal.set(std::make_exception_ptr(std::runtime_error("failed")));
  const std::exception_ptr error = signal.wait();
  ASSERT_TRUE(error);
  EXPECT_THROW(std::rethrow_exception(error), std::runtime_error);
  EXPECT_FALSE(signal.slept());
}

TEST(WaitSignal, AWaitLongerThanItsSpinSleepsUntilTheSignal) {
  // Far past the spin (tuning::kWaitSignalSpin): the waiter is asleep by
  // then, unless it was itself kept off a core that long (a few tries).
  bool slept = false;
  for (int attempt = 0; attempt < 5 && !slept; ++attempt) {
    WaitSignal signal;
    std::thread setter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      signal.set();
    });
    EXPECT_FALSE(signal.wait());
    slept = signal.slept();
    setter.join();
  }
  EXPECT_TRUE(slept);
}

// Progress that moves at every look, and a signal the look itself sets once
// the wait is well past the plain spin but within the progress spin: the
// waiter spins to the end, unless a lost core ended its spin (counted by
// Contention), after which a thread sets the signal as a backstop.
TEST(WaitSignal, AWaiterSpinsOnWhileTheWorkersProgress) {
  static_assert(2 * tuning::kWaitSignalSpin < tuning::kProgressSpin / 2);
  bool spun_through = false;
  for (int attempt = 0; attempt < 5 && !spun_through; ++attempt) {
    WaitSignal signal;
    const std::uint64_t losses = Contention::process().losses();
    const auto start = SpinClock::now();
    std::uint64_t looks = 0;
    std::atomic<bool> set{false};
    const auto completed = [&] {
      if (SpinClock::now() - start >= tuning::kProgressSpin / 2 && !set.exchange(true)) signal.set();
      return ++looks;
    };
    std::thread backstop([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (!set.exchange(true)) signal.set();
    });
    EXPECT_FALSE(signal.wait_while_progressing(completed));
    backstop.join();
    spun_through = !signal.slept() || Contention::process().losses() != losses;
  }
  EXPECT_TRUE(spun_through);
}

// Progress that stands still: the waiter sleeps after a window, long before
// the signal comes within the progress spin's budget, unless it was itself
// kept off a core until then (a few tries).
TEST(WaitSignal, AWaiterSleepsOnceTheWorkersStandStill) {
  bool slept = false;
  for (int attempt = 0; attempt < 5 && !slept; ++attempt) {
    WaitSignal signal;
    std::thread setter([&] {
      std::this_thread::sleep_for(tuning::kProgressSpin / 2);
      signal.set();
    });
    EXPECT_FALSE(signal.wait_while_progressing([] { return std::uint64_t{7}; }));
    setter.join();
    slept = signal.slept();
  }
  EXPECT_TRUE(slept);
}

}  // namespace
}  // namespace depengine::detail
