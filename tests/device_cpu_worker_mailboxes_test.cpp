// WorkerMailboxes (devices/cpu/worker_mailboxes.h): boxes claimed and given
// back, deliveries only into open boxes, each delivered op handed out
// exactly once, also when deliverers race with receivers that open and close.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "devices/cpu/worker_mailboxes.h"

namespace depengine::detail {
namespace {

TEST(WorkerMailboxes, EachWorkerClaimsABoxOfItsOwnUntilNoneIsLeft) {
  WorkerMailboxes boxes(3);
  std::set<int> claimed;
  for (int i = 0; i < 3; ++i) claimed.insert(boxes.claim());
  EXPECT_EQ(claimed, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(boxes.claim(), -1);
  boxes.release(1);
  EXPECT_EQ(boxes.claim(), 1);
}

TEST(WorkerMailboxes, DeliversOnlyIntoOpenBoxes) {
  WorkerMailboxes boxes(2);
  const int a = boxes.claim();
  const int b = boxes.claim();
  auto ops = std::make_unique<OpBlock[]>(3);
  OpBlock* list[] = {&ops[0], &ops[1], &ops[2]};
  EXPECT_EQ(boxes.deliver(list, 3), 0u) << "no box is open";
  boxes.open(a);
  EXPECT_FALSE(boxes.has_delivery(a));
  EXPECT_EQ(boxes.take(a), nullptr);
  EXPECT_EQ(boxes.deliver(list, 3), 1u);
  EXPECT_TRUE(boxes.has_delivery(a));
  EXPECT_FALSE(boxes.has_delivery(b));
  EXPECT_EQ(boxes.deliver(list + 1, 2), 0u) << "a box holds one op";
  EXPECT_EQ(boxes.take(a), &ops[0]);
  EXPECT_EQ(boxes.take(a), nullptr) << "taken once";
  EXPECT_EQ(boxes.deliver(list + 1, 2), 0u) << "a take closes the box";
  boxes.open(a);
  boxes.open(b);
  EXPECT_EQ(boxes.deliver(list + 1, 2), 2u);
  // One op in each box, in either order (where a delivery starts varies).
  const OpBlock* in_a = boxes.close(a);
  const OpBlock* in_b = boxes.close(b);
  EXPECT_TRUE((in_a == &ops[1] && in_b == &ops[2]) || (in_a == &ops[2] && in_b == &ops[1]));
  EXPECT_EQ(boxes.close(a), nullptr);
  EXPECT_EQ(boxes.close(b), nullptr);
  EXPECT_EQ(boxes.deliver(list, 1), 0u) << "closed boxes take nothing";
}

TEST(WorkerMailboxes, AnOpenBoxClosedEmptyGivesNothing) {
  WorkerMailboxes boxes(1);
  const int box = boxes.claim();
  boxes.open(box);
  EXPECT_EQ(boxes.close(box), nullptr);
  auto op = std::make_unique<OpBlock>();
  OpBlock* list[] = {op.get()};
  EXPECT_EQ(boxes.deliver(list, 1), 0u);
}

// Deliverers hand ops to receivers that keep opening, polling and closing
// their boxes; what a deliverer could not deliver it keeps. Every op must end
// up with exactly one thread.
TEST(WorkerMailboxes, RacingDeliverersAndReceiversLoseAndDuplicateNothing) {
  constexpr int kReceivers = 3, kDeliverers = 3, kOpsEach = 20000;
  WorkerMailboxes boxes(kReceivers);
  auto ops = std::make_unique<OpBlock[]>(kDeliverers * kOpsEach);
  std::vector<std::atomic<int>> seen(kDeliverers * kOpsEach);
  std::atomic<int> deliverers_left{kDeliverers};
  std::vector<std::thread> threads;
  for (int r = 0; r < kReceivers; ++r) {
    threads.emplace_back([&] {
      const int box = boxes.claim();
      ASSERT_GE(box, 0);
      while (deliverers_left.load() != 0) {
        boxes.open(box);
        for (int spin = 0; spin < 50; ++spin) {
          if (OpBlock* op = boxes.take(box)) {
            seen[op - ops.get()].fetch_add(1);
            break;
          }
        }
        if (OpBlock* op = boxes.close(box)) seen[op - ops.get()].fetch_add(1);
      }
      boxes.release(box);
    });
  }
  for (int d = 0; d < kDeliverers; ++d) {
    threads.emplace_back([&, d] {
      for (int i = 0; i < kOpsEach; i += 2) {
        OpBlock* pair[] = {&ops[d * kOpsEach + i], &ops[d * kOpsEach + i + 1]};
        const std::size_t delivered = boxes.deliver(pair, 2);
        for (std::size_t k = delivered; k < 2; ++k) seen[pair[k] - ops.get()].fetch_add(1);
      }
      deliverers_left.fetch_sub(1);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kDeliverers * kOpsEach; ++i) ASSERT_EQ(seen[i].load(), 1) << "op " << i;
}

}  // namespace
}  // namespace depengine::detail
