// MachineLoad's arithmetic on made-up samples, and a real sample's sense.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "sync/machine_load.h"

#if defined(__linux__)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace depengine::detail {
namespace {

CpuTimeSample at(double seconds, double machine_busy_s, double process_s) {
  return {.when = SpinClock::time_point(std::chrono::duration_cast<SpinClock::duration>(
              std::chrono::duration<double>(seconds))),
          .machine_busy_s = machine_busy_s,
          .process_s = process_s};
}

TEST(MachineLoad, OthersAreTheMachinesBusyTimeLessTheProcesss) {
  // 1 s of wall time: the machine busy 1.8 CPU-seconds, this process 0.8.
  EXPECT_DOUBLE_EQ(MachineLoad::others_busy_cores(at(10, 100, 50), at(11, 101.8, 50.8)), 1.0);
  // The process alone kept both cores busy: nobody else.
  EXPECT_DOUBLE_EQ(MachineLoad::others_busy_cores(at(10, 100, 50), at(10.5, 101, 51)), 0.0);
}

TEST(MachineLoad, TickRoundingNeverMakesOthersNegativeAndNoTimeIsNoLoad) {
  // /proc/stat counts whole ticks: the machine's count may lag the process's.
  EXPECT_DOUBLE_EQ(MachineLoad::others_busy_cores(at(10, 100, 50), at(10.2, 100.3, 50.38)), 0.0);
  EXPECT_DOUBLE_EQ(MachineLoad::others_busy_cores(at(10, 100, 50), at(10, 105, 50)), 0.0);
  EXPECT_DOUBLE_EQ(MachineLoad::others_busy_cores(at(11, 100, 50), at(10, 105, 50)), 0.0);
}

TEST(MachineLoad, ASampleOfThisMachineCountsThisProcesssWork) {
  const auto first = MachineLoad::sample(SpinClock::now());
#if defined(__linux__)
  ASSERT_TRUE(first.has_value());
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < until) {
  }
  const auto second = MachineLoad::sample(SpinClock::now());
  ASSERT_TRUE(second.has_value());
  EXPECT_GE(second->process_s - first->process_s, 0.2);  // the spin above
  EXPECT_GE(second->machine_busy_s - first->machine_busy_s, 0.2);
#else
  EXPECT_FALSE(first.has_value());
#endif
}

#if defined(__linux__)
// A child process that spins is another process keeping a core busy: seen
// once a window has passed, and not before.
TEST(MachineLoad, AnotherProcessThatSpinsIsSeen) {
  MachineLoad load;  // its first sample
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < until) {
    }
    _exit(0);
  }
  load.update(SpinClock::now());  // within the window: no judgement yet
  EXPECT_FALSE(load.neighbours_busy());
  std::this_thread::sleep_for(MachineLoad::kWindow + std::chrono::milliseconds(100));
  load.update(SpinClock::now());
  const bool seen = load.neighbours_busy();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(seen);
}
#endif

}  // namespace
}  // namespace depengine::detail
