// WaitSignal (sync/wait_signal.h): the error it hands over, and whether the
// waiter slept, which tells the engine a woken frontend may have been moved.

#include <gtest/gtest.h>

#include <chrono>
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

}  // namespace
}  // namespace depengine::detail
