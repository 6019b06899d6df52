// WorkerMailboxes (devices/cpu/worker_mailboxes.h): boxes claimed and given
// back, deliveries only into open boxes, reclaimed only from owners away
// long enough, each delivered op handed out exactly once, also when
// deliverers race with receivers that open and close and with thieves.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "devices/cpu/worker_mailboxes.h"

namespace depengine::detail {
namespace {

const SpinClock::time_point kT0{std::chrono::seconds(100)};
constexpr std::chrono::microseconds kUs{1};

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
  boxes.open(a, kT0);
  EXPECT_FALSE(boxes.has_delivery(a));
  EXPECT_EQ(boxes.take(a), nullptr);
  EXPECT_EQ(boxes.deliver(list, 3), 1u);
  EXPECT_TRUE(boxes.has_delivery(a));
  EXPECT_FALSE(boxes.has_delivery(b));
  EXPECT_EQ(boxes.deliver(list + 1, 2), 0u) << "a box holds one op";
  EXPECT_EQ(boxes.take(a), &ops[0]);
  EXPECT_EQ(boxes.take(a), nullptr) << "taken once";
  EXPECT_EQ(boxes.deliver(list + 1, 2), 0u) << "a take closes the box";
  boxes.open(a, kT0);
  boxes.open(b, kT0);
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
  boxes.open(box, kT0);
  EXPECT_EQ(boxes.close(box), nullptr);
  auto op = std::make_unique<OpBlock>();
  OpBlock* list[] = {op.get()};
  EXPECT_EQ(boxes.deliver(list, 1), 0u);
}

TEST(WorkerMailboxes, AnOpIsReclaimedOnlyFromAnOwnerAwayLongEnough) {
  WorkerMailboxes boxes(2);
  const int owner = boxes.claim();
  const int thief = boxes.claim();
  auto ops = std::make_unique<OpBlock[]>(2);
  OpBlock* list[] = {&ops[0], &ops[1]};
  boxes.open(owner, kT0);
  ASSERT_EQ(boxes.deliver(list, 1), 1u);
  EXPECT_EQ(boxes.reclaim(thief, kT0 - kUs), nullptr) << "the owner was awake after that";
  boxes.awake(owner, kT0 + 10 * kUs);
  EXPECT_EQ(boxes.reclaim(thief, kT0 + 9 * kUs), nullptr) << "the owner's last round counts";
  EXPECT_EQ(boxes.reclaim(owner, kT0 + 10 * kUs), nullptr) << "not from the thief's own box";
  EXPECT_TRUE(boxes.has_delivery(owner));
  EXPECT_EQ(boxes.reclaim(thief, kT0 + 10 * kUs), &ops[0]);
  EXPECT_FALSE(boxes.has_delivery(owner));
  EXPECT_EQ(boxes.reclaim(thief, kT0 + 10 * kUs), nullptr) << "reclaimed once";
  EXPECT_EQ(boxes.take(owner), nullptr) << "the owner finds it gone";
  EXPECT_EQ(boxes.deliver(list + 1, 1), 0u) << "a reclaim closes the box";
  EXPECT_EQ(boxes.close(owner), nullptr);
  // Reopened, the box receives again, and what the owner takes is not
  // reclaimed after it.
  boxes.open(owner, kT0 + 20 * kUs);
  ASSERT_EQ(boxes.deliver(list + 1, 1), 1u);
  EXPECT_EQ(boxes.take(owner), &ops[1]);
  EXPECT_EQ(boxes.reclaim(thief, kT0 + 30 * kUs), nullptr);
  EXPECT_EQ(boxes.reclaim(-1, kT0 + 30 * kUs), nullptr);
}

TEST(WorkerMailboxes, AnOwnersRoundsAreNotedAtMostOncePerResolution) {
  WorkerMailboxes boxes(2);
  const int owner = boxes.claim();
  const int thief = boxes.claim();
  auto op = std::make_unique<OpBlock>();
  OpBlock* list[] = {op.get()};
  constexpr auto kResolution = WorkerMailboxes::kAwakeResolution;
  boxes.open(owner, kT0);
  boxes.awake(owner, kT0 + kResolution / 2);
  ASSERT_EQ(boxes.deliver(list, 1), 1u);
  EXPECT_EQ(boxes.reclaim(thief, kT0), op.get()) << "a round within the resolution is not noted";
  boxes.open(owner, kT0 + kResolution);
  boxes.awake(owner, kT0 + 2 * kResolution);
  ASSERT_EQ(boxes.deliver(list, 1), 1u);
  EXPECT_EQ(boxes.reclaim(thief, kT0 + kResolution), nullptr) << "a round a resolution later is noted";
  EXPECT_EQ(boxes.reclaim(thief, kT0 + 2 * kResolution), op.get());
}

// Deliverers hand ops to receivers that keep opening, polling and closing
// their boxes, while thieves reclaim whatever waits in another's box (every
// receiver counts as away); what a deliverer could not deliver it keeps.
// Every op must end up with exactly one thread.
TEST(WorkerMailboxes, RacingDeliverersReceiversAndThievesLoseAndDuplicateNothing) {
  constexpr int kReceivers = 2, kThieves = 2, kDeliverers = 3, kOpsEach = 20000;
  WorkerMailboxes boxes(kReceivers + kThieves);
  auto ops = std::make_unique<OpBlock[]>(kDeliverers * kOpsEach);
  std::vector<std::atomic<int>> seen(kDeliverers * kOpsEach);
  std::atomic<int> deliverers_left{kDeliverers};
  const auto count = [&](OpBlock* op) { seen[op - ops.get()].fetch_add(1); };
  std::vector<std::thread> threads;
  for (int r = 0; r < kReceivers; ++r) {
    threads.emplace_back([&] {
      const int box = boxes.claim();
      ASSERT_GE(box, 0);
      while (deliverers_left.load() != 0) {
        boxes.open(box, kT0);
        for (int spin = 0; spin < 50; ++spin) {
          if (OpBlock* op = boxes.take(box)) {
            count(op);
            break;
          }
        }
        if (OpBlock* op = boxes.close(box)) count(op);
      }
      boxes.release(box);
    });
  }
  for (int t = 0; t < kThieves; ++t) {
    threads.emplace_back([&] {
      const int box = boxes.claim();
      ASSERT_GE(box, 0);
      while (deliverers_left.load() != 0) {
        if (OpBlock* op = boxes.reclaim(box, kT0 + kUs)) count(op);
      }
      boxes.release(box);
    });
  }
  for (int d = 0; d < kDeliverers; ++d) {
    threads.emplace_back([&, d] {
      for (int i = 0; i < kOpsEach; i += 2) {
        OpBlock* pair[] = {&ops[d * kOpsEach + i], &ops[d * kOpsEach + i + 1]};
        const std::size_t delivered = boxes.deliver(pair, 2);
        for (std::size_t k = delivered; k < 2; ++k) count(pair[k]);
      }
      deliverers_left.fetch_sub(1);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(boxes.reclaim(-1, kT0 + kUs), nullptr) << "each receiver's last close took what was left";
  for (int i = 0; i < kDeliverers * kOpsEach; ++i) ASSERT_EQ(seen[i].load(), 1) << "op " << i;
}

// An owner's take and a thief's reclaim started at the same moment, round
// after round, on one op: exactly one of them gets it.
TEST(WorkerMailboxes, AnOwnerAndAThiefStartedTogetherTakeAnOpOnce) {
  constexpr int kRounds = 100000;
  WorkerMailboxes boxes(2);
  const int owner = boxes.claim();
  const int thief = boxes.claim();
  OpBlock op;
  std::atomic<int> go{0}, done{0};
  std::atomic<int> owner_took{0}, thief_took{0};
  const auto contender = [&](auto try_take, std::atomic<int>& took) {
    for (int round = 1; round <= kRounds; ++round) {
      while (go.load() != round) std::this_thread::yield();
      if (try_take() != nullptr) took.fetch_add(1);
      done.fetch_add(1);
    }
  };
  std::thread owner_thread(contender, [&] { return boxes.take(owner); }, std::ref(owner_took));
  std::thread thief_thread(contender, [&] { return boxes.reclaim(thief, kT0); }, std::ref(thief_took));
  int left_in_box = 0;
  for (int round = 1; round <= kRounds; ++round) {
    boxes.open(owner, kT0);
    OpBlock* list[] = {&op};
    ASSERT_EQ(boxes.deliver(list, 1), 1u);
    go.store(round);
    while (done.load() != 2 * round) std::this_thread::yield();
    if (boxes.close(owner) != nullptr) ++left_in_box;
  }
  owner_thread.join();
  thief_thread.join();
  EXPECT_EQ(left_in_box, 0);
  EXPECT_EQ(owner_took.load() + thief_took.load(), kRounds);
}

}  // namespace
}  // namespace depengine::detail
