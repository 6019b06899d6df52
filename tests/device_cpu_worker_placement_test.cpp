// WorkerPlacement (devices/cpu/worker_placement.h): which CPU a starting
// or running worker, or a frontend on a worker's CPU, moves to, the slots
// workers take and give back, and the move itself.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "devices/cpu/worker_placement.h"
#include "sync/tuning.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace depengine::detail {
namespace {

TEST(WorkerPlacement, AWorkerAloneOnItsCpuStays) {
  EXPECT_EQ(WorkerPlacement::target_cpu(0, {1, -1}, {0, 1, 2}), -1);
  EXPECT_EQ(WorkerPlacement::target_cpu(3, {}, {0, 1, 2, 3}), -1);
}

TEST(WorkerPlacement, AWorkerSharingACpuGoesToTheLowestFreeAllowedOne) {
  EXPECT_EQ(WorkerPlacement::target_cpu(0, {0, 1}, {0, 1, 2, 3}), 2);
  EXPECT_EQ(WorkerPlacement::target_cpu(1, {1, -1}, {0, 1}), 0);
  EXPECT_EQ(WorkerPlacement::target_cpu(4, {4}, {3, 4, 5}), 3);
}

TEST(WorkerPlacement, WithNoFreeAllowedCpuItStays) {
  EXPECT_EQ(WorkerPlacement::target_cpu(0, {0, 1}, {0, 1}), -1);
  EXPECT_EQ(WorkerPlacement::target_cpu(0, {0}, {0}), -1);
  EXPECT_EQ(WorkerPlacement::target_cpu(-1, {-1}, {0, 1}), -1);  // CPU unknown
}

std::vector<int> moves;
bool record_move(int cpu) {
  moves.push_back(cpu);
  return true;
}
bool refuse_move(int cpu) {
  moves.push_back(cpu);
  return false;
}
std::vector<int> two_cpus() { return {0, 1}; }
std::vector<int> four_cpus() { return {0, 1, 2, 3}; }

// A clock of our own, far past the gap between moves.
SpinClock::time_point at_ms(int ms) { return SpinClock::time_point(std::chrono::milliseconds(1000 + ms)); }
const int kGapMs = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(tuning::kWorkerMoveGap).count());

// Two workers arriving on `cpu` at `ms`, the moves recorded afresh: the
// second one's slot.
int second_of_two(WorkerPlacement& placement, int cpu, int ms, const Contention& contention,
                  WorkerPlacement::Move move, WorkerPlacement::AllowedCpus allowed) {
  moves.clear();
  placement.arrive_at(cpu, at_ms(ms), contention, move, allowed);
  return placement.arrive_at(cpu, at_ms(ms), contention, move, allowed);
}

TEST(WorkerPlacement, ArrivalsTakeSlotsAndMoveOffSharedCpus) {
  moves.clear();
  WorkerPlacement placement(3);
  const Contention quiet;
  const int a = placement.arrive_at(0, at_ms(0), quiet, &record_move, &four_cpus);
  const int b = placement.arrive_at(0, at_ms(0), quiet, &record_move, &four_cpus);  // shares CPU 0: moves to 1
  const int c = placement.arrive_at(3, at_ms(0), quiet, &record_move, &four_cpus);  // alone on 3: stays
  EXPECT_EQ(moves, (std::vector<int>{1}));
  EXPECT_EQ(placement.cpu_of(a), 0);
  EXPECT_EQ(placement.cpu_of(b), 1);
  EXPECT_EQ(placement.cpu_of(c), 3);
  EXPECT_EQ(placement.arrive_at(1, at_ms(0), quiet, &record_move, &four_cpus), -1);  // every slot taken
  placement.leave(b);
  EXPECT_EQ(placement.cpu_of(b), -1);
  const int d = placement.arrive_at(0, at_ms(kGapMs), quiet, &record_move, &four_cpus);  // 1 is free again
  EXPECT_EQ(d, b);
  EXPECT_EQ(moves, (std::vector<int>{1, 1}));
  EXPECT_EQ(placement.cpu_of(d), 1);
}

TEST(WorkerPlacement, ATakenSlotOccupiesItsCpuUntilItsWorkerLeaves) {
  moves.clear();
  WorkerPlacement placement(1);  // one worker: a slot all the same, never a move
  const int a = placement.arrive_at(2, at_ms(0), Contention(), &record_move, &four_cpus);
  EXPECT_EQ(a, 0);
  EXPECT_TRUE(placement.occupied(2));
  EXPECT_FALSE(placement.occupied(0));
  EXPECT_FALSE(placement.occupied(-1));
  EXPECT_TRUE(moves.empty());
  placement.leave(a);
  EXPECT_FALSE(placement.occupied(2));
}

TEST(WorkerPlacement, AMoveThatFailsLeavesTheWorkerWhereItIs) {
  WorkerPlacement placement(2);
  const int b = second_of_two(placement, 1, 0, Contention(), &refuse_move, &two_cpus);
  EXPECT_EQ(moves, (std::vector<int>{0}));
  EXPECT_EQ(placement.cpu_of(b), 1);
}

TEST(WorkerPlacement, AtMostOneMovePerGap) {
  WorkerPlacement placement(3);
  const Contention quiet;
  const int b = second_of_two(placement, 0, 0, quiet, &record_move, &four_cpus);
  placement.leave(b);
  const int c = placement.arrive_at(0, at_ms(kGapMs - 1), quiet, &record_move, &four_cpus);  // too soon
  EXPECT_EQ(moves, (std::vector<int>{1}));
  EXPECT_EQ(placement.cpu_of(c), 0);
  placement.leave(c);
  const int d = placement.arrive_at(0, at_ms(kGapMs), quiet, &record_move, &four_cpus);
  EXPECT_EQ(moves, (std::vector<int>{1, 1}));
  EXPECT_EQ(placement.cpu_of(d), 1);
}

TEST(WorkerPlacement, AWorkerThatStartedLateMovesWithinTheGap) {
  // It waited behind the worker on its CPU (devices/cpu/late_starts.h):
  // the move is what ends the wait, whatever moved last.
  WorkerPlacement placement(3);
  const Contention quiet;
  const int b = second_of_two(placement, 0, 0, quiet, &record_move, &four_cpus);
  placement.leave(b);
  const int c = placement.arrive_at(0, at_ms(1), quiet, &record_move, &four_cpus, /*late=*/true);
  EXPECT_EQ(moves, (std::vector<int>{1, 1}));
  EXPECT_EQ(placement.cpu_of(c), 1);
  // It spends the gap as any move does.
  placement.leave(c);
  placement.arrive_at(0, at_ms(2), quiet, &record_move, &four_cpus);
  EXPECT_EQ(moves, (std::vector<int>{1, 1}));
}

TEST(WorkerPlacement, NoMoveWhileTheProcessLosesItsCores) {
  WorkerPlacement placement(2);
  Contention busy;
  busy.lost_core(at_ms(0));
  const int b = second_of_two(placement, 0, 1, busy, &record_move, &two_cpus);
  EXPECT_TRUE(moves.empty());
  EXPECT_EQ(placement.cpu_of(b), 0);
}

TEST(WorkerPlacement, NoMoveWithoutAMoverAsBesideBusyNeighbours) {
  WorkerPlacement placement(2);
  const Contention quiet;
  const int b = second_of_two(placement, 0, 0, quiet, nullptr, &four_cpus);
  EXPECT_EQ(placement.cpu_of(b), 0);  // its slot taken, on the shared CPU
  EXPECT_FALSE(placement.step_off_at(0, at_ms(0), /*gap=*/false, quiet, nullptr, &four_cpus));
  // The moves ruled out spent no gap: one allowed right after is made.
  placement.leave(b);
  const int c = placement.arrive_at(0, at_ms(1), quiet, &record_move, &four_cpus);
  EXPECT_EQ(placement.cpu_of(c), 1);
  EXPECT_EQ(moves, (std::vector<int>{1}));
}

TEST(WorkerPlacement, AFrontendOnAWorkersCpuStepsOffToAFreeOne) {
  WorkerPlacement placement(2);
  const Contention quiet;
  moves.clear();
  const int a = placement.arrive_at(1, at_ms(0), quiet, &record_move, &four_cpus);
  // Right after the worker's own move, and again: a frontend that slept is
  // not held to the gap.
  EXPECT_TRUE(placement.step_off_at(1, at_ms(0), /*gap=*/false, quiet, &record_move, &four_cpus));
  EXPECT_TRUE(placement.step_off_at(1, at_ms(0), /*gap=*/false, quiet, &record_move, &four_cpus));
  EXPECT_EQ(moves, (std::vector<int>{0, 0}));
  EXPECT_EQ(placement.cpu_of(a), 1);  // the worker stays where it is
}

TEST(WorkerPlacement, AFrontendStaysOffWorkersOrWithoutAFreeCpu) {
  WorkerPlacement placement(2);
  const Contention quiet;
  moves.clear();
  placement.arrive_at(0, at_ms(0), quiet, &record_move, &two_cpus);
  EXPECT_FALSE(placement.step_off_at(1, at_ms(0), false, quiet, &record_move, &two_cpus));  // no worker on 1
  EXPECT_FALSE(placement.step_off_at(-1, at_ms(0), false, quiet, &record_move, &two_cpus));  // CPU unknown
  placement.arrive_at(1, at_ms(0), quiet, &record_move, &two_cpus);
  EXPECT_FALSE(placement.step_off_at(0, at_ms(0), false, quiet, &record_move, &two_cpus));  // every CPU taken
  EXPECT_TRUE(moves.empty());
}

TEST(WorkerPlacement, AFrontendPushingStepsOffAtMostOncePerGapWithTheWorkers) {
  WorkerPlacement placement(2);
  const Contention quiet;
  const int b = second_of_two(placement, 0, 0, quiet, &record_move, &four_cpus);  // moves to 1
  ASSERT_EQ(placement.cpu_of(b), 1);
  EXPECT_FALSE(placement.step_off_at(1, at_ms(kGapMs - 1), /*gap=*/true, quiet, &record_move, &four_cpus));
  EXPECT_TRUE(placement.step_off_at(1, at_ms(kGapMs), /*gap=*/true, quiet, &record_move, &four_cpus));
  EXPECT_EQ(moves, (std::vector<int>{1, 2}));
  // A move after a sleep counts for the gap too.
  EXPECT_TRUE(placement.step_off_at(1, at_ms(3 * kGapMs), /*gap=*/false, quiet, &record_move, &four_cpus));
  EXPECT_FALSE(placement.step_off_at(1, at_ms(3 * kGapMs), /*gap=*/true, quiet, &record_move, &four_cpus));
}

TEST(WorkerPlacement, AFrontendStaysWhileTheProcessLosesItsCoresOrTheMoveFails) {
  WorkerPlacement placement(2);
  Contention busy;
  busy.lost_core(at_ms(0));
  moves.clear();
  placement.arrive_at(0, at_ms(0), Contention(), &record_move, &two_cpus);
  EXPECT_FALSE(placement.step_off_at(0, at_ms(1), false, busy, &record_move, &two_cpus));
  EXPECT_TRUE(moves.empty());
  EXPECT_FALSE(placement.step_off_at(0, at_ms(1), false, Contention(), &refuse_move, &two_cpus));
  EXPECT_EQ(moves, (std::vector<int>{1}));
}

TEST(WorkerPlacement, ALookThatFindsNoFreeCpuSpendsNoGap) {
  // A frontend beside a worker on every CPU looks often and finds none.
  WorkerPlacement placement(2);
  const Contention quiet;
  moves.clear();
  placement.arrive_at(0, at_ms(0), quiet, &record_move, &two_cpus);
  const int b = placement.arrive_at(1, at_ms(0), quiet, &record_move, &two_cpus);
  EXPECT_FALSE(placement.step_off_at(0, at_ms(kGapMs), /*gap=*/true, quiet, &record_move, &two_cpus));
  placement.leave(b);
  EXPECT_TRUE(placement.step_off_at(0, at_ms(kGapMs), /*gap=*/true, quiet, &record_move, &two_cpus));
  EXPECT_EQ(moves, (std::vector<int>{1}));
}

// The made-up clock of recheck_at, and how often it was read.
SpinClock::time_point g_now;
int g_clock_reads = 0;
SpinClock::time_point made_up_now() {
  ++g_clock_reads;
  return g_now;
}

TEST(WorkerPlacement, ARunningWorkerTheSchedulerMovedOntoAnotherWorkersCpuMovesOff) {
  WorkerPlacement placement(2);
  const Contention quiet;
  moves.clear();
  const int a = placement.arrive_at(0, at_ms(0), quiet, &record_move, &four_cpus);
  const int b = placement.arrive_at(1, at_ms(0), quiet, &record_move, &four_cpus);
  ASSERT_TRUE(moves.empty());
  g_now = at_ms(kGapMs);
  placement.recheck_at(b, 0, &made_up_now, quiet, &record_move, &four_cpus);  // now on a's CPU
  EXPECT_EQ(moves, (std::vector<int>{1}));
  EXPECT_EQ(placement.cpu_of(a), 0);
  EXPECT_EQ(placement.cpu_of(b), 1);
}

TEST(WorkerPlacement, ARunningWorkerRecordsTheCpuItRunsOnWithoutAClockReadWhenAlone) {
  WorkerPlacement placement(2);
  const Contention quiet;
  moves.clear();
  g_clock_reads = 0;
  placement.arrive_at(0, at_ms(0), quiet, &record_move, &four_cpus);
  const int b = placement.arrive_at(1, at_ms(0), quiet, &record_move, &four_cpus);
  placement.recheck_at(b, 3, &made_up_now, quiet, &record_move, &four_cpus);
  EXPECT_EQ(placement.cpu_of(b), 3);
  EXPECT_TRUE(placement.occupied(3));
  EXPECT_FALSE(placement.occupied(1));
  placement.recheck_at(-1, 0, &made_up_now, quiet, &record_move, &four_cpus);  // a helper: no slot
  placement.recheck_at(b, -1, &made_up_now, quiet, &record_move, &four_cpus);  // CPU unknown
  EXPECT_EQ(placement.cpu_of(b), 3);
  EXPECT_TRUE(moves.empty());
  EXPECT_EQ(g_clock_reads, 0);
}

TEST(WorkerPlacement, ARunningWorkerMovesAtMostOncePerGap) {
  WorkerPlacement placement(2);
  const Contention quiet;
  const int b = second_of_two(placement, 0, 0, quiet, &record_move, &four_cpus);  // moves to 1
  ASSERT_EQ(placement.cpu_of(b), 1);
  g_now = at_ms(kGapMs - 1);
  placement.recheck_at(b, 0, &made_up_now, quiet, &record_move, &four_cpus);  // back on 0, too soon
  EXPECT_EQ(moves, (std::vector<int>{1}));
  EXPECT_EQ(placement.cpu_of(b), 0);  // recorded where it is all the same
  g_now = at_ms(kGapMs);
  placement.recheck_at(b, 0, &made_up_now, quiet, &record_move, &four_cpus);
  EXPECT_EQ(moves, (std::vector<int>{1, 1}));
  EXPECT_EQ(placement.cpu_of(b), 1);
}

#if defined(__linux__)
TEST(WorkerPlacement, OneWorkerTakesItsSlotOnItsCpu) {
  WorkerPlacement placement(1);
  const int a = placement.arrive();
  ASSERT_EQ(a, 0);
  EXPECT_GE(placement.cpu_of(a), 0);
  EXPECT_TRUE(placement.occupied(placement.cpu_of(a)));
  placement.leave(a);
  EXPECT_EQ(placement.cpu_of(a), -1);
}
#endif

#if defined(__linux__)
TEST(WorkerPlacement, RecheckRecordsTheCallersCpu) {
  WorkerPlacement placement(1);
  const int a = placement.arrive();
  ASSERT_EQ(a, 0);
  placement.recheck(a);
  // Where it ran at the look (it may have moved since).
  const std::vector<int> allowed = WorkerPlacement::allowed_cpus();
  EXPECT_NE(std::find(allowed.begin(), allowed.end(), placement.cpu_of(a)), allowed.end());
  placement.leave(a);
}

TEST(WorkerPlacement, MoveToRunsTheThreadThereAndRestoresItsAffinity) {
  const std::vector<int> allowed = WorkerPlacement::allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const int target = allowed.back();
  EXPECT_TRUE(WorkerPlacement::move_to(target));
  EXPECT_EQ(WorkerPlacement::allowed_cpus(), allowed);
  EXPECT_FALSE(WorkerPlacement::move_to(-1));
  EXPECT_FALSE(WorkerPlacement::move_to(CPU_SETSIZE));
}
#endif

}  // namespace
}  // namespace depengine::detail
