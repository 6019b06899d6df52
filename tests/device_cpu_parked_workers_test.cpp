// ParkedWorkers (devices/cpu/parked_workers.h): a parked worker wakes when
// unparked and not otherwise, a park ends by itself after its timeout,
// close() releases every parked worker without work, another executor
// sends one away (to free its thread) but never its own, and under racing
// parks, timeouts and unparks every successful unpark wakes exactly one
// worker.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "devices/cpu/parked_workers.h"

namespace depengine::detail {
namespace {

using namespace std::chrono_literals;

TEST(ParkedWorkers, UnparkWithNobodyParkedFails) {
  ParkedWorkers parked;
  EXPECT_FALSE(parked.unpark());
}

TEST(ParkedWorkers, AParkEndsByItselfAfterItsTimeout) {
  ParkedWorkers parked;
  EXPECT_FALSE(parked.park(1ms));
  EXPECT_FALSE(parked.unpark()) << "a worker that timed out is no longer parked";
}

TEST(ParkedWorkers, UnparkWakesTheParkedWorker) {
  ParkedWorkers parked;
  auto worker = std::async(std::launch::async, [&] { return parked.park(60s); });
  // Retried until the worker is parked: an unpark before that finds nobody.
  while (!parked.unpark()) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(worker.get());
}

TEST(ParkedWorkers, CloseReleasesParkedWorkersWithoutWorkAndEndsLaterParksAtOnce) {
  ParkedWorkers parked;
  std::atomic<int> waiting{0};
  std::vector<std::future<bool>> workers;
  for (int i = 0; i < 3; ++i) {
    workers.push_back(std::async(std::launch::async, [&] {
      waiting.fetch_add(1);
      return parked.park(60s);
    }));
  }
  while (waiting.load() != 3) std::this_thread::sleep_for(1ms);
  parked.close();
  for (auto& w : workers) EXPECT_FALSE(w.get());
  EXPECT_FALSE(parked.park(60s)) << "returns at once after close";
  EXPECT_FALSE(parked.unpark());
}

TEST(ParkedWorkers, AnotherExecutorSendsAParkedWorkerAwayButNotItsOwn) {
  ParkedWorkers mine, other;
  auto in_mine = std::async(std::launch::async, [&] { return mine.park(60s); });
  auto in_other = std::async(std::launch::async, [&] { return other.park(60s); });
  // Retried until the worker in `other` is parked: before, there is none to send away.
  while (in_other.wait_for(1ms) != std::future_status::ready) mine.free_one_elsewhere();
  EXPECT_FALSE(in_other.get()) << "sent away without work: its task ends";
  EXPECT_EQ(in_mine.wait_for(10ms), std::future_status::timeout) << "the worker parked in `mine` stays parked";
  while (!mine.unpark()) std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(in_mine.get());
}

TEST(ParkedWorkers, EverySuccessfulUnparkWakesExactlyOneWorkerUnderRaces) {
  // Workers park with timeouts short enough to race the unparks; each
  // successful unpark must be matched by one park that returned true.
  ParkedWorkers parked;
  constexpr int kWorkers = 4;
  std::atomic<bool> stop{false};
  std::atomic<int> woken{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < kWorkers; ++i) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        if (parked.park(std::chrono::microseconds(50 + 50 * (woken.load() % 3)))) woken.fetch_add(1);
      }
    });
  }
  int unparked = 0;
  // At least 20,000 tries, and on until one found a parked worker: the
  // threads may not have parked yet when the tries begin (slow to start
  // under a sanitizer on a loaded machine).
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  for (int i = 0; i < 20000 || (unparked == 0 && std::chrono::steady_clock::now() < give_up); ++i) {
    if (parked.unpark()) ++unparked;
    if (i % 64 == 0) std::this_thread::yield();
  }
  // Every claimed place is woken before the workers can leave.
  stop.store(true);
  parked.close();
  for (auto& t : workers) t.join();
  EXPECT_GT(unparked, 0);
  EXPECT_EQ(woken.load(), unparked);
}

}  // namespace
}  // namespace depengine::detail
