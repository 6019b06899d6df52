// ReadyQueue (devices/cpu/ready_queue.h) and RingProgress
// (devices/cpu/ring_progress.h): a worker's queued ops are left to it while
// its ring makes progress, and taken by others, a share at a time, once it
// stalls.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "devices/cpu/ring_progress.h"
#include "devices/cpu/ready_queue.h"

namespace depengine::detail {
namespace {

using std::chrono::microseconds;

SpinClock::time_point at_us(int us) { return SpinClock::time_point(microseconds(1'000'000 + us)); }

TEST(RingProgress, AFirstLookStartsTheWatchAndTakesNothing) {
  RingProgress progress;
  EXPECT_FALSE(progress.may_take(at_us(0), microseconds(3)));
  EXPECT_FALSE(progress.may_take(at_us(2), microseconds(3)));
  EXPECT_TRUE(progress.may_take(at_us(3), microseconds(3)));
  EXPECT_TRUE(progress.may_take(at_us(50), microseconds(3)));
}

TEST(RingProgress, APopRestartsTheWatch) {
  RingProgress progress;
  EXPECT_FALSE(progress.may_take(at_us(0), microseconds(3)));
  progress.popped();
  EXPECT_FALSE(progress.may_take(at_us(4), microseconds(3)));  // progress seen: a new watch
  EXPECT_FALSE(progress.may_take(at_us(6), microseconds(3)));
  EXPECT_TRUE(progress.may_take(at_us(7), microseconds(3)));
}

TEST(RingProgress, NoDelayTakesAtOnce) {
  RingProgress progress;
  EXPECT_TRUE(progress.may_take(at_us(0), microseconds(0)));
}

// Runs `body` on a thread of its own, as a worker's thread would.
template <typename Body>
void on_other_thread(Body body) {
  std::thread thread(body);
  thread.join();
}

std::size_t pop_all(ReadyQueue& queue, std::vector<OpBlock*>& out) {
  OpBlock* batch[64];
  bool more = false;
  std::size_t total = 0;
  while (std::size_t n = queue.pop(batch, 64, more)) {
    out.insert(out.end(), batch, batch + n);
    total += n;
  }
  return total;
}

class ReadyQueueOwnership : public ::testing::Test {
 protected:
  std::vector<OpBlock> ops = std::vector<OpBlock>(5);
  void push_all(ReadyQueue& queue) {
    for (OpBlock& op : ops) queue.push(&op);
  }
  static std::size_t popped_on_other_thread(ReadyQueue& queue) {
    std::vector<OpBlock*> taken;
    on_other_thread([&] { pop_all(queue, taken); });
    return taken.size();
  }
};

TEST_F(ReadyQueueOwnership, AWorkersOpsAreLeftToItWhileItRuns) {
  ReadyQueue queue(2, std::chrono::hours(1));
  ReadyQueue::RunMark mark(queue);
  mark.running(true);
  push_all(queue);
  EXPECT_EQ(popped_on_other_thread(queue), 0u);
  std::vector<OpBlock*> taken;
  EXPECT_EQ(pop_all(queue, taken), ops.size());  // the owner takes its own
}

TEST_F(ReadyQueueOwnership, OthersTakeThemOnceTheOwnerStalls) {
  ReadyQueue queue(2, std::chrono::milliseconds(1));
  std::vector<OpBlock*> taken;
  ReadyQueue::RunMark mark(queue);
  mark.running(true);
  push_all(queue);
  on_other_thread([&] {
    EXPECT_EQ(pop_all(queue, taken), 0u);  // the watch starts
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    // One share (half, for two consumers) per delay: the pop restarts the watch.
    EXPECT_EQ(pop_all(queue, taken), 2u);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(pop_all(queue, taken), 1u);
  });
  EXPECT_EQ(pop_all(queue, taken), 2u);
}

TEST_F(ReadyQueueOwnership, OpsOfAThreadThatRunsNoneAreTakenAtOnce) {
  ReadyQueue queue(2, std::chrono::hours(1));
  push_all(queue);  // a frontend's pushes
  EXPECT_EQ(popped_on_other_thread(queue), ops.size());
}

TEST_F(ReadyQueueOwnership, OpsOfAWorkerThatStoppedRunningAreTakenAtOnce) {
  ReadyQueue queue(1, std::chrono::hours(1));
  ReadyQueue::RunMark mark(queue);
  mark.running(true);
  push_all(queue);
  mark.running(false);
  EXPECT_EQ(popped_on_other_thread(queue), ops.size());
}

TEST_F(ReadyQueueOwnership, OpsAWorkerQueuesWhileIdleAreTakenAtOnce) {
  ReadyQueue queue(1, std::chrono::hours(1));
  ReadyQueue::RunMark mark(queue);
  mark.running(true);
  mark.running(false);
  push_all(queue);  // as when it registers a frontend's batch
  EXPECT_EQ(popped_on_other_thread(queue), ops.size());
}

TEST_F(ReadyQueueOwnership, AConsumerPopsItsOwnRingFirst) {
  ReadyQueue queue(1, std::chrono::hours(1));
  std::vector<OpBlock> others(3);
  on_other_thread([&] {
    for (OpBlock& op : others) queue.push(&op);
  });
  push_all(queue);
  OpBlock* batch[64];
  bool more = false;
  // One consumer takes a whole ring per pop: its own, though the other was filled first.
  ASSERT_EQ(queue.pop(batch, 64, more), ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) EXPECT_EQ(batch[i], &ops[i]);
  EXPECT_EQ(queue.pop(batch, 64, more), others.size());
}

}  // namespace
}  // namespace depengine::detail
