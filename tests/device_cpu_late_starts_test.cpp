// LateStarts (devices/cpu/late_starts.h): when a running worker makes way
// for a started one, and which arrivals count as late, on a made-up clock.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "devices/cpu/late_starts.h"
#include "sync/tuning.h"

namespace depengine::detail {
namespace {

SpinClock::time_point at_us(std::int64_t us) { return SpinClock::time_point(std::chrono::microseconds(1'000'000 + us)); }
const std::int64_t kLateUs = std::chrono::duration_cast<std::chrono::microseconds>(tuning::kLateStart).count();

TEST(LateStarts, NothingStartedNothingToMakeWayFor) {
  LateStarts starts;
  EXPECT_FALSE(starts.pending());
  EXPECT_FALSE(starts.make_way(at_us(0)));
  EXPECT_FALSE(starts.make_way(at_us(10 * kLateUs)));
}

TEST(LateStarts, ARunningWorkerMakesWayOnceAStartIsLateThenOncePerLateStart) {
  LateStarts starts;
  starts.started(at_us(0));
  EXPECT_TRUE(starts.pending());
  EXPECT_FALSE(starts.make_way(at_us(1)));  // a woken thread takes tens of µs to run
  EXPECT_FALSE(starts.make_way(at_us(kLateUs - 1)));
  EXPECT_TRUE(starts.make_way(at_us(kLateUs)));
  EXPECT_FALSE(starts.make_way(at_us(kLateUs + 1)));  // another worker already made way
  EXPECT_FALSE(starts.make_way(at_us(2 * kLateUs - 1)));
  EXPECT_TRUE(starts.make_way(at_us(2 * kLateUs)));
}

TEST(LateStarts, AWorkerArrivingBesideAPendingStartMakesWayOnceForIt) {
  LateStarts starts;
  starts.started(at_us(0));
  starts.started(at_us(1));
  EXPECT_FALSE(starts.arrived(at_us(10)));  // the first, in time
  EXPECT_TRUE(starts.make_way_on_arrival(at_us(11)));
  EXPECT_FALSE(starts.make_way_on_arrival(at_us(12)));
  // The second was made way for: it counts as late and moves at once.
  EXPECT_TRUE(starts.arrived(at_us(13)));
  EXPECT_FALSE(starts.pending());
  EXPECT_FALSE(starts.make_way_on_arrival(at_us(14)));
  // A later start gets a way of its own.
  starts.started(at_us(20));
  starts.started(at_us(21));
  starts.arrived(at_us(30));
  EXPECT_TRUE(starts.make_way_on_arrival(at_us(31)));
}

TEST(LateStarts, AnArrivalIsLateAfterAWayMadeForItOrAfterLateStart) {
  LateStarts quick;
  quick.started(at_us(0));
  EXPECT_FALSE(quick.arrived(at_us(50)));
  EXPECT_FALSE(quick.pending());
  EXPECT_FALSE(quick.make_way(at_us(10 * kLateUs)));

  LateStarts made_way;
  made_way.started(at_us(0));
  ASSERT_TRUE(made_way.make_way(at_us(kLateUs)));
  EXPECT_TRUE(made_way.arrived(at_us(kLateUs + 1)));

  LateStarts slow;
  slow.started(at_us(0));
  EXPECT_TRUE(slow.arrived(at_us(kLateUs)));

  // A way made for an earlier start does not make the next one late.
  made_way.started(at_us(kLateUs + 100));
  EXPECT_FALSE(made_way.arrived(at_us(kLateUs + 110)));
}

TEST(LateStarts, StartsStillPendingAfterAnArrivalAreTimedFromIt) {
  LateStarts starts;
  starts.started(at_us(0));
  starts.started(at_us(1));
  EXPECT_TRUE(starts.arrived(at_us(kLateUs)));
  EXPECT_TRUE(starts.pending());
  EXPECT_FALSE(starts.make_way(at_us(2 * kLateUs - 1)));
  EXPECT_TRUE(starts.make_way(at_us(2 * kLateUs)));
  EXPECT_TRUE(starts.arrived(at_us(2 * kLateUs + 1)));
  EXPECT_FALSE(starts.pending());
}

TEST(LateStarts, ConcurrentStartsAndArrivalsLeaveNothingPending) {
  LateStarts starts;
  constexpr int kThreads = 4, kRounds = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&starts, t] {
      for (int i = 0; i < kRounds; ++i) {
        const auto now = at_us(std::int64_t(i) * kThreads + t);
        starts.started(now);
        starts.make_way(now);
        starts.arrived(now);
        starts.make_way_on_arrival(now);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_FALSE(starts.pending());
  EXPECT_FALSE(starts.make_way(at_us(std::int64_t(kRounds) * kThreads * 10)));
}

}  // namespace
}  // namespace depengine::detail
