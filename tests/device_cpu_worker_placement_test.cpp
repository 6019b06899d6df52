// WorkerPlacement (devices/cpu/worker_placement.h): which CPU a starting
// worker moves to, the slots it takes and gives back, and the move itself.

#include <gtest/gtest.h>

#include <vector>

#include "devices/cpu/worker_placement.h"

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

TEST(WorkerPlacement, ArrivalsTakeSlotsAndMoveOffSharedCpus) {
  moves.clear();
  WorkerPlacement placement(3);
  const int a = placement.arrive_at(0, &record_move, &four_cpus);
  const int b = placement.arrive_at(0, &record_move, &four_cpus);  // shares CPU 0: moves to 1
  const int c = placement.arrive_at(3, &record_move, &four_cpus);  // alone on 3: stays
  EXPECT_EQ(moves, (std::vector<int>{1}));
  EXPECT_EQ(placement.cpu_of(a), 0);
  EXPECT_EQ(placement.cpu_of(b), 1);
  EXPECT_EQ(placement.cpu_of(c), 3);
  EXPECT_EQ(placement.arrive_at(1, &record_move, &four_cpus), -1);  // every slot taken
  placement.leave(b);
  EXPECT_EQ(placement.cpu_of(b), -1);
  const int d = placement.arrive_at(0, &record_move, &four_cpus);  // 1 is free again
  EXPECT_EQ(d, b);
  EXPECT_EQ(moves, (std::vector<int>{1, 1}));
  EXPECT_EQ(placement.cpu_of(d), 1);
}

TEST(WorkerPlacement, AMoveThatFailsLeavesTheWorkerWhereItIs) {
  moves.clear();
  WorkerPlacement placement(2);
  placement.arrive_at(1, &refuse_move, &two_cpus);
  const int b = placement.arrive_at(1, &refuse_move, &two_cpus);
  EXPECT_EQ(moves, (std::vector<int>{0}));
  EXPECT_EQ(placement.cpu_of(b), 1);
}

TEST(WorkerPlacement, OneWorkerNeverLooks) {
  WorkerPlacement placement(1);
  EXPECT_EQ(placement.arrive(), -1);
  placement.leave(-1);
}

#if defined(__linux__)
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
