// The waiting policy (sync/spin_wait.h): its decisions on made-up times, and
// SpinWait's use of them.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "sync/spin_wait.h"
#include "sync/tuning.h"

namespace depengine::detail {
namespace {

using namespace std::chrono_literals;

const SpinClock::time_point t0 = SpinClock::time_point(1h);

TEST(SpinPolicy, ARoundIsJudgedByItsLength) {
  EXPECT_EQ(judge_round(t0, t0 + 1us, t0 + 50us), RoundVerdict::keep_spinning);
  EXPECT_EQ(judge_round(t0, t0 + 1us, t0 + 1us), RoundVerdict::budget_spent);
  // Far longer than a round: another thread had the core, whatever the budget.
  EXPECT_EQ(judge_round(t0, t0 + tuning::kLostCoreRound + 1us, t0 + 1s), RoundVerdict::lost_core);
  EXPECT_EQ(judge_round(t0, t0 + tuning::kLostCoreRound, t0 + 1s), RoundVerdict::keep_spinning);
}

TEST(SpinPolicy, ALostCoreStopsSpinningForAHoldThatDoublesOnEachLossInARow) {
  Contention contention;
  EXPECT_FALSE(contention.active(t0));
  contention.lost_core(t0);
  const auto hold = tuning::kContentionHold;
  EXPECT_TRUE(contention.active(t0 + hold - 1us));
  EXPECT_FALSE(contention.active(t0 + hold));
  contention.lost_core(t0 + hold);
  EXPECT_TRUE(contention.active(t0 + hold + 2 * hold - 1us));
  EXPECT_FALSE(contention.active(t0 + hold + 2 * hold));
  // The hold stops doubling.
  SpinClock::time_point t = t0 + 3 * hold;
  for (int i = 0; i < 20; ++i) contention.lost_core(t);
  const auto longest = hold * (1 << tuning::kContentionHoldDoublings);
  EXPECT_TRUE(contention.active(t + longest - 1us));
  EXPECT_FALSE(contention.active(t + longest));
  // A spin that kept its core ends the run: the next loss holds the base time.
  contention.kept_core();
  t += longest;
  contention.lost_core(t);
  EXPECT_TRUE(contention.active(t + hold - 1us));
  EXPECT_FALSE(contention.active(t + hold));
}

TEST(SpinPolicy, AnEarlierLossDoesNotShortenALaterHold) {
  Contention contention;
  contention.lost_core(t0 + 10ms);
  contention.lost_core(t0);  // reported late by a slower spinner: holds 2 x 5 ms from t0
  EXPECT_TRUE(contention.active(t0 + 10ms + tuning::kContentionHold - 1us));
}

TEST(SpinPolicy, SpinnerSlotsBoundHowManySpinAtOnce) {
  SpinnerSlots slots(2);
  EXPECT_TRUE(slots.try_take());
  EXPECT_TRUE(slots.try_take());
  EXPECT_FALSE(slots.try_take());
  slots.release();
  EXPECT_TRUE(slots.try_take());
  SpinnerSlots none(0);
  EXPECT_FALSE(none.try_take());
}

TEST(SpinWait, DoesNotSpinWhileContendedOrWithoutASlot) {
  SpinnerSlots slots(1);
  Contention contended;
  contended.lost_core(SpinClock::now() + 1h);
  {
    SpinWait spin(1s, SpinWait::kNeverYield, contended, slots);
    EXPECT_FALSE(spin.round());
    EXPECT_EQ(slots.taken(), 0);
  }
  Contention quiet;
  SpinnerSlots full(0);
  SpinWait spin(1s, SpinWait::kNeverYield, quiet, full);
  EXPECT_FALSE(spin.round());
}

TEST(SpinWait, HoldsItsSlotWhileItSpinsAndEndsWithinItsBudget) {
  SpinnerSlots slots(1);
  {
    Contention contention;
    SpinWait spin(2ms, SpinWait::kYieldEvery8, contention, slots);
    EXPECT_EQ(slots.taken(), 1);
    {
      SpinWait second(2ms, SpinWait::kNeverYield, contention, slots);
      EXPECT_FALSE(second.round()) << "a second spinner beyond the slots";
    }
    EXPECT_EQ(slots.taken(), 1);
    while (spin.round()) {
    }  // ends: by its budget, or by losing its core
    EXPECT_EQ(slots.taken(), 0);
    EXPECT_FALSE(spin.round());
  }
  EXPECT_EQ(slots.taken(), 0);
  Contention contention;
  {
    SpinWait stopped_by_its_caller(1s, SpinWait::kNeverYield, contention, slots);
    EXPECT_EQ(slots.taken(), 1);
  }
  EXPECT_EQ(slots.taken(), 0);
}

TEST(SpinWait, ANoneBudgetDoesNotSpin) {
  SpinnerSlots slots(4);
  Contention contention;
  SpinWait spin(0ns, SpinWait::kNeverYield, contention, slots);
  EXPECT_FALSE(spin.round());
  EXPECT_EQ(slots.taken(), 0);
}

TEST(SpinWait, ARoundThatLostItsCoreMarksTheContention) {
  // This thread loses its core for certain: a sleep inside the round.
  SpinnerSlots slots(1);
  Contention contention;
  SpinWait spin(10s, SpinWait::kNeverYield, contention, slots);
  std::this_thread::sleep_for(tuning::kLostCoreRound * 3);
  EXPECT_FALSE(spin.round());
  EXPECT_TRUE(contention.active(SpinClock::now()));
  EXPECT_EQ(slots.taken(), 0);
}

TEST(SpinWait, ARoundLooksBetweenItsPausesAndStopsPausingOnceArrived) {
  SpinnerSlots slots(1);
  Contention contention;
  SpinWait spin(1s, SpinWait::kNeverYield, contention, slots);
  int looks = 0;
  EXPECT_TRUE(spin.round([&] { return ++looks, false; }));
  const int looks_per_round = looks;
  EXPECT_GT(looks_per_round, 1) << "one look per pause";
  looks = 0;
  EXPECT_TRUE(spin.round([&] { return ++looks == 2; })) << "arriving does not end the spin: the caller looks";
  EXPECT_EQ(looks, 2) << "no pause after the arrival";
}

TEST(SpinWait, AYieldingRoundDoesNotLook) {
  SpinnerSlots slots(1);
  Contention contention;
  SpinWait spin(1s, SpinWait::kYieldEachRound, contention, slots);
  int looks = 0;
  spin.round([&] { return ++looks, false; });
  EXPECT_EQ(looks, 0);
}

}  // namespace
}  // namespace depengine::detail
