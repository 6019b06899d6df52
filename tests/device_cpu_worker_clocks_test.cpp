// WorkerClocks (devices/cpu/worker_clocks.h): the CPU time of one executor's
// worker tasks, and of no other thread. The engine's use of it (a burst's
// stall in a long op): HeldOps.*LongOp* in engine_held_ops_test.cpp.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "devices/cpu/worker_clocks.h"
#include "sync/engine_thread_clock.h"
#include "tests/support/thread_cpu_spin.h"

namespace depengine::detail {
namespace {

using std::chrono::milliseconds;

#if defined(__linux__)
TEST(WorkerClocks, ATasksTimeCountsWhileItRunsAndAfterItEnds) {
  WorkerClocks clocks;
  const double before = clocks.seconds().value();
  std::atomic<bool> spun{false}, done{false};
  std::thread task([&] {
    const int slot = clocks.enter();
    ASSERT_GE(slot, 0);
    spin_for_thread_cpu(milliseconds(200));
    spun = true;
    while (!done.load()) std::this_thread::sleep_for(milliseconds(1));  // entered, idle
    clocks.leave(slot);
    spin_for_thread_cpu(milliseconds(200));  // after leave(): not counted
  });
  while (!spun.load()) std::this_thread::sleep_for(milliseconds(1));
  const double running = clocks.seconds().value();
  done = true;
  task.join();
  const double ended = clocks.seconds().value();
  EXPECT_GE(running - before, 0.15);  // read from another thread while it runs
  EXPECT_GE(ended - before, 0.15);    // kept once it left
  EXPECT_LT(ended - before, 0.35);    // without its time after leave()
}

// Another thread's time is not the workers', even one the process counts as
// an engine's (a frontend of another engine: EngineThreadClock).
TEST(WorkerClocks, OtherThreadsOfTheProcessDoNotCount) {
  WorkerClocks clocks;
  std::thread([&] { clocks.leave(clocks.enter()); }).join();  // a slot used and freed
  const double before = clocks.seconds().value();
  std::thread([] {
    EngineThreadClock::enlist();
    spin_for_thread_cpu(milliseconds(200));
  }).join();
  spin_for_thread_cpu(milliseconds(100));
  EXPECT_LT(clocks.seconds().value() - before, 0.05);
}

TEST(WorkerClocks, SlotsAreReusedAndGrowWithTasksAtOnce) {
  WorkerClocks clocks;
  const int first = clocks.enter(), second = clocks.enter();  // two tasks on one thread, as two would be
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
  clocks.leave(first);
  EXPECT_EQ(clocks.enter(), 0);
  clocks.leave(0);
  clocks.leave(second);
  clocks.leave(-1);  // a task that was not counted
  EXPECT_TRUE(clocks.seconds().has_value());
}

// Asleep: every task in sleeps (in an op that waits, say), none runnable.
TEST(WorkerClocks, AllAsleepWhenEveryTaskSleepsAndOneIsIn) {
  WorkerClocks clocks;
  EXPECT_FALSE(clocks.all_asleep()) << "no task: none to be asleep (a start may be pending)";
  std::atomic<bool> entered{false}, wake{false}, spin{false}, stop{false};
  std::thread sleeper([&] {
    const int slot = clocks.enter();
    entered = true;
    wake.wait(false);
    clocks.leave(slot);
  });
  while (!entered.load()) std::this_thread::yield();
  bool asleep = false;
  for (int i = 0; i < 2000 && !asleep; ++i) {
    asleep = clocks.all_asleep();
    if (!asleep) std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_TRUE(asleep);
  std::thread spinner([&] {
    const int slot = clocks.enter();
    spin = true;
    while (!stop.load()) {
    }
    clocks.leave(slot);
  });
  while (!spin.load()) std::this_thread::yield();
  EXPECT_FALSE(clocks.all_asleep()) << "one task runs";
  stop = true;
  spinner.join();
  wake = true;
  wake.notify_all();
  sleeper.join();
  EXPECT_FALSE(clocks.all_asleep()) << "no task any more";
}
#else
TEST(WorkerClocks, NoClockElsewhere) { EXPECT_FALSE(WorkerClocks().seconds().has_value()); }
#endif

}  // namespace
}  // namespace depengine::detail
