// ProgressWatch (sync/progress_watch.h): when a count that stands still
// says the awaited threads are not running, on made-up times and counts.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "sync/progress_watch.h"

namespace depengine::detail {
namespace {

using namespace std::chrono_literals;

const SpinClock::time_point t0 = SpinClock::time_point(1h);

TEST(ProgressWatch, ACountThatMovesEachWindowKeepsTheSpinGoing) {
  std::uint64_t count = 10;
  ProgressWatch watch(count, t0, 3us);
  for (int window = 1; window <= 100; ++window) {
    count += 1;
    EXPECT_TRUE(watch.moving([&] { return count; }, t0 + window * 3us)) << "window " << window;
  }
  EXPECT_FALSE(watch.stalled());
}

TEST(ProgressWatch, ACountStillForAWholeWindowIsAStall) {
  const std::uint64_t count = 10;
  ProgressWatch watch(count, t0, 3us);
  EXPECT_TRUE(watch.moving([&] { return count; }, t0 + 2us));  // not a window yet
  EXPECT_FALSE(watch.stalled());
  EXPECT_FALSE(watch.moving([&] { return count; }, t0 + 3us));
  EXPECT_TRUE(watch.stalled());
  // A stall is final for this wait, even if the count moves later.
  EXPECT_FALSE(watch.moving([&] { return count + 1; }, t0 + 4us));
}

TEST(ProgressWatch, TheWindowRestartsAtEachMove) {
  std::uint64_t count = 0;
  ProgressWatch watch(count, t0, 3us);
  count = 1;
  EXPECT_TRUE(watch.moving([&] { return count; }, t0 + 3us));  // moved: a new window from t0 + 3 µs
  EXPECT_TRUE(watch.moving([&] { return count; }, t0 + 5us));
  EXPECT_FALSE(watch.moving([&] { return count; }, t0 + 6us));
}

TEST(ProgressWatch, TheCountIsReadOnlyOnceAWindow) {
  std::uint64_t count = 0;
  int reads = 0;
  ProgressWatch watch(count, t0, 3us);
  const auto read = [&] {
    ++reads;
    return ++count;
  };
  for (int i = 1; i <= 30; ++i) EXPECT_TRUE(watch.moving(read, t0 + i * 100ns));  // 3 µs in all
  EXPECT_EQ(reads, 1);
}

}  // namespace
}  // namespace depengine::detail
