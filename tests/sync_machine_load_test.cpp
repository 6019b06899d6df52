// MachineLoad's arithmetic on made-up samples, a real sample's sense, and
// EngineThreadClock, which tells the engine's threads from the others.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "sync/engine_thread_clock.h"
#include "sync/machine_load.h"

#if defined(__linux__)
#include "tests/support/one_cpu.h"
#include "tests/support/thread_cpu_spin.h"
#endif

#if defined(__linux__)
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace depengine::detail {
namespace {

CpuTimeSample at(double seconds, double cpus_busy_s, double engine_s) {
  return {.when = SpinClock::time_point(std::chrono::duration_cast<SpinClock::duration>(
              std::chrono::duration<double>(seconds))),
          .cpus_busy_s = cpus_busy_s,
          .engine_s = engine_s};
}

TEST(MachineLoad, OthersAreTheMachinesBusyTimeLessTheEngineThreads) {
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

// /proc/stat as Linux writes it: the sum of every CPU, then one line per
// CPU (user nice system idle iowait irq softirq steal ...), then others.
constexpr const char* kProcStat =
    "cpu  300 10 60 9000 5 2 3 0 0 0\n"
    "cpu0 100 0 20 4500 2 1 1 0 0 0\n"
    "cpu1 200 10 40 4500 3 1 2 0 0 0\n"
    "intr 12345 1 2 3\n"
    "ctxt 999\n";

TEST(MachineLoad, BusyTicksCountTheCpusAskedFor) {
  // user + nice + system + irq + softirq, not idle or iowait.
  EXPECT_EQ(MachineLoad::busy_ticks(kProcStat, [](int) { return true; }), 122u + 253u);
  EXPECT_EQ(MachineLoad::busy_ticks(kProcStat, [](int cpu) { return cpu == 1; }), 253u);
  EXPECT_EQ(MachineLoad::busy_ticks(kProcStat, [](int cpu) { return cpu == 0; }), 122u);
  EXPECT_FALSE(MachineLoad::busy_ticks(kProcStat, [](int cpu) { return cpu == 7; }).has_value());
  EXPECT_FALSE(MachineLoad::busy_ticks("", [](int) { return true; }).has_value());
  EXPECT_FALSE(MachineLoad::busy_ticks("garbage\ncpu\n", [](int) { return true; }).has_value());
}

TEST(MachineLoad, AVerdictHoldsForItsLifeOnly) {
  MachineLoad load;
  // Others kept one core busy from 10 s to 11 s.
  load.judge(at(10, 100, 50), at(11, 101.8, 50.8));
  const SpinClock::time_point end = at(11, 0, 0).when;
  EXPECT_TRUE(load.neighbours_busy(end));
  EXPECT_TRUE(load.neighbours_busy(end + MachineLoad::kVerdictLife));
  EXPECT_FALSE(load.neighbours_busy(end + MachineLoad::kVerdictLife + std::chrono::milliseconds(1)));
  // A quiet window ends it at once; so does one below kBusyCores.
  load.judge(at(11, 101.8, 50.8), at(12, 102.8, 51.8));
  EXPECT_FALSE(load.neighbours_busy(at(12, 0, 0).when));
  load.judge(at(12, 102.8, 51.8), at(13, 104.2, 52.8));  // 0.4 cores
  EXPECT_FALSE(load.neighbours_busy(at(13, 0, 0).when));
}


TEST(MachineLoad, TheVerdictCountsTheCoresTheNeighboursKeepBusy) {
  MachineLoad load;
  load.judge(at(10, 100, 50), at(11, 101.8, 50.8));  // 1 core
  EXPECT_EQ(load.neighbour_cores(), 1);
  load.judge(at(11, 101.8, 50.8), at(12, 104.4, 51.8));  // 1.6 cores
  EXPECT_EQ(load.neighbour_cores(), 2);
  // Neighbours held back by the engine's threads: a quarter past one core
  // is another they want; less is one.
  load.judge(at(12, 104.4, 51.8), at(13, 106.1, 52.2));  // 1.3 cores
  EXPECT_EQ(load.neighbour_cores(), 2);
  load.judge(at(13, 106.1, 52.2), at(14, 107.6, 52.5));  // 1.2 cores
  EXPECT_EQ(load.neighbour_cores(), 1);
  load.judge(at(14, 107.6, 52.5), at(15, 108.2, 52.7));  // 0.4: not busy
  EXPECT_EQ(load.neighbour_cores(), 0);
  load.judge(at(15, 108.2, 52.7), at(16, 108.8, 52.7));  // 0.6: busy, at least one
  EXPECT_EQ(load.neighbour_cores(), 1);
}

TEST(MachineLoad, ASampleCountsTheMachinesWorkAndTheEngineThreadsApart) {
  const auto first = MachineLoad::sample(SpinClock::now());
#if defined(__linux__)
  ASSERT_TRUE(first.has_value());
  std::thread engine_thread([] {
    EngineThreadClock::enlist();
    spin_for_thread_cpu(std::chrono::milliseconds(300));
  });
  engine_thread.join();
  // Not the engine's: a thread of its own (an earlier test of this process
  // may have enlisted this one by pushing from it).
  std::thread([] { spin_for_thread_cpu(std::chrono::milliseconds(300)); }).join();
  const auto second = MachineLoad::sample(SpinClock::now());
  ASSERT_TRUE(second.has_value());
  const double engine_s = second->engine_s - first->engine_s;
  EXPECT_GE(engine_s, 0.2);  // the ended thread's spin, kept
  EXPECT_LT(engine_s, 0.5);  // not this thread's
  EXPECT_GE(second->cpus_busy_s - first->cpus_busy_s, 0.4);
#else
  EXPECT_FALSE(first.has_value());
#endif
}

TEST(EngineThreadClock, AnEnlistedThreadsTimeCountsWhileItRunsAndAfterItEnds) {
#if defined(__linux__)
  const double before = EngineThreadClock::seconds().value();
  std::atomic<bool> spun{false}, stop{false};
  std::thread engine_thread([&] {
    EngineThreadClock::enlist();
    EngineThreadClock::enlist();  // once is enough
    spin_for_thread_cpu(std::chrono::milliseconds(200));
    spun = true;
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!spun) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const double running = EngineThreadClock::seconds().value();
  stop = true;
  engine_thread.join();
  const double ended = EngineThreadClock::seconds().value();
  EXPECT_GE(running - before, 0.15);
  EXPECT_GE(ended, running);
#else
  EXPECT_FALSE(EngineThreadClock::seconds().has_value());
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

// /proc/stat's busy seconds of every CPU.
double every_cpus_busy_seconds() {
  std::ifstream stat("/proc/stat");
  const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto ticks = MachineLoad::busy_ticks(text, [](int) { return true; });
  return static_cast<double>(ticks.value_or(0)) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// A neighbour on a CPU this process may not run on takes no core from it
// (a container's cpuset, mpirun's binding): a sample leaves its time out.
// (Other processes may keep this thread's CPU busy meanwhile, as other
// tests do: that counts for both measures alike.)
TEST(MachineLoad, ANeighbourOnACpuOutsideTheAffinityMaskIsLeftOut) {
  const OnOneCpu confined;
  if (!confined.confined()) GTEST_SKIP() << "one CPU in the mask: nowhere else to put the neighbour";
  const double every_before = every_cpus_busy_seconds();
  const auto before = MachineLoad::sample(SpinClock::now());
  ASSERT_TRUE(before.has_value());
  std::atomic<bool> stop{false};
  std::thread neighbour([&, theirs = confined.other_cpu()] {
    cpu_set_t other;
    CPU_ZERO(&other);
    CPU_SET(theirs, &other);
    sched_setaffinity(0, sizeof other, &other);
    while (!stop) {
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  neighbour.join();
  const auto after = MachineLoad::sample(SpinClock::now());
  const double every = every_cpus_busy_seconds() - every_before;
  ASSERT_TRUE(after.has_value());
  const double counted = after->cpus_busy_s - before->cpus_busy_s;
  // The neighbour's CPU time (up to 0.3 s) is in the first, not the second.
  EXPECT_GE(every - counted, 0.05) << "every CPU " << every << " s, the mask's " << counted << " s";
}

// So is a thread of this process that is not the engine's (a data loader,
// an interpreter).
TEST(MachineLoad, AThreadOfThisProcessOutsideTheEngineThatSpinsIsSeen) {
  MachineLoad load;
  std::atomic<bool> stop{false};
  std::thread neighbour([&] {
    while (!stop) {
    }
  });
  std::this_thread::sleep_for(MachineLoad::kWindow + std::chrono::milliseconds(100));
  load.update(SpinClock::now());
  const bool seen = load.neighbours_busy();
  stop = true;
  neighbour.join();
  EXPECT_TRUE(seen);
}
#endif

}  // namespace
}  // namespace depengine::detail
