// WorkerThreads (devices/cpu/worker_threads.h): the CPU device's threads run
// every task enqueued, at most as many at once as they are, wake for a task
// after they went to sleep, and use no CPU once idle.

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "devices/cpu/worker_threads.h"

namespace depengine::detail {
namespace {

using namespace std::chrono_literals;

template <typename Done>
bool wait_for(Done&& done, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(100us);
  return done();
}

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

TEST(WorkerThreads, RunEveryTaskAtMostAsManyAtOnceAsTheyAre) {
  constexpr int kThreads = 3, kTasks = 200;
  WorkerThreads threads(kThreads);
  std::atomic<int> running{0}, most{0}, done{0};
  for (int i = 0; i < kTasks; ++i) {
    threads.enqueue([&] {
      const int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(50us);
      --running;
      ++done;
    });
  }
  ASSERT_TRUE(wait_for([&] { return done.load() == kTasks; }));
  EXPECT_LE(most.load(), kThreads);
  EXPECT_GE(most.load(), 1);
}

TEST(WorkerThreads, AThreadAsleepWakesForATask) {
  WorkerThreads threads(1);
  std::atomic<int> done{0};
  threads.enqueue([&] { ++done; });
  ASSERT_TRUE(wait_for([&] { return done.load() == 1; }));
  std::this_thread::sleep_for(50ms);  // far past the spin (tuning::kWorkerThreadSpin): asleep
  threads.enqueue([&] { ++done; });
  EXPECT_TRUE(wait_for([&] { return done.load() == 2; }));
}

TEST(WorkerThreads, DestructionRunsWhatWasEnqueuedFirst) {
  std::atomic<int> done{0};
  {
    WorkerThreads threads(1);
    for (int i = 0; i < 20; ++i) threads.enqueue([&] { ++done; });
  }
  EXPECT_EQ(done.load(), 20);
}

TEST(WorkerThreads, IdleThreadsUseNoCpu) {
  WorkerThreads threads(2);
  std::atomic<int> done{0};
  threads.enqueue([&] { ++done; });
  threads.enqueue([&] { ++done; });
  ASSERT_TRUE(wait_for([&] { return done.load() == 2; }));
  std::this_thread::sleep_for(50ms);
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(500ms);
  // Two threads spinning would take about a second of CPU here.
  EXPECT_LT(process_cpu_seconds() - before, 0.05);
}

}  // namespace
}  // namespace depengine::detail
