// KeptOps (devices/cpu/kept_ops.h): a few ops kept per worker, taken back by
// its keeper or taken by another worker only once kept long enough (made-up
// times), and each kept op handed out exactly once when keepers and thieves
// race.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "devices/cpu/kept_ops.h"

namespace depengine::detail {
namespace {

using std::chrono::microseconds;

const SpinClock::time_point kT0{std::chrono::seconds(100)};

TEST(KeptOps, AWorkerKeepsAFewOpsAndTakesThemBack) {
  constexpr int kSlots = KeptOps::kSlots;
  KeptOps kept(2);
  auto ops = std::make_unique<OpBlock[]>(kSlots + 2);
  EXPECT_EQ(kept.take_back(0), nullptr);
  EXPECT_FALSE(kept.any());
  for (int i = 0; i < kSlots; ++i) EXPECT_TRUE(kept.keep(0, &ops[i], kT0)) << "op " << i;
  EXPECT_TRUE(kept.any());
  EXPECT_FALSE(kept.keep(0, &ops[kSlots], kT0)) << kSlots << " ops per worker";
  EXPECT_TRUE(kept.keep(1, &ops[kSlots], kT0)) << "the other worker's slots are its own";
  std::vector<OpBlock*> back;
  while (OpBlock* op = kept.take_back(0)) back.push_back(op);
  ASSERT_EQ(back.size(), static_cast<std::size_t>(kSlots)) << "each taken once";
  for (int i = 0; i < kSlots; ++i) EXPECT_EQ(back[i], &ops[i]) << "in the order kept";
  EXPECT_EQ(kept.take_back(1), &ops[kSlots]);
  EXPECT_FALSE(kept.any());
  EXPECT_TRUE(kept.keep(0, &ops[kSlots + 1], kT0)) << "freed slots keep again";
  EXPECT_EQ(kept.take_back(0), &ops[kSlots + 1]);
}

TEST(KeptOps, AnotherWorkerTakesOnlyOpsKeptLongEnough) {
  KeptOps kept(3);
  auto ops = std::make_unique<OpBlock[]>(2);
  ASSERT_TRUE(kept.keep(0, &ops[0], kT0));
  ASSERT_TRUE(kept.keep(1, &ops[1], kT0 + microseconds(20)));
  EXPECT_EQ(kept.steal(2, kT0 - microseconds(1)), nullptr) << "kept after the bound";
  EXPECT_EQ(kept.steal(0, kT0 + microseconds(10)), nullptr) << "a worker does not steal its own op";
  EXPECT_EQ(kept.steal(2, kT0 + microseconds(10)), &ops[0]);
  EXPECT_EQ(kept.take_back(0), nullptr) << "gone to the thief";
  EXPECT_EQ(kept.steal(2, kT0 + microseconds(10)), nullptr) << "the other op was kept later";
  EXPECT_EQ(kept.steal(-1, SpinClock::time_point::max()), &ops[1]) << "any op, kept at any time";
  EXPECT_FALSE(kept.any());
}

TEST(KeptOps, AnotherWorkerTakesAKeepersOpsOneByOneOnceKeptLongEnough) {
  KeptOps kept(2);
  auto ops = std::make_unique<OpBlock[]>(3);
  ASSERT_TRUE(kept.keep(0, &ops[0], kT0));
  ASSERT_TRUE(kept.keep(0, &ops[1], kT0 + microseconds(5)));
  ASSERT_TRUE(kept.keep(0, &ops[2], kT0 + microseconds(20)));
  EXPECT_EQ(kept.steal(1, kT0 + microseconds(10)), &ops[0]);
  EXPECT_EQ(kept.steal(1, kT0 + microseconds(10)), &ops[1]);
  EXPECT_EQ(kept.steal(1, kT0 + microseconds(10)), nullptr) << "the last was kept later";
  EXPECT_EQ(kept.take_back(0), &ops[2]);
  EXPECT_FALSE(kept.any());
}

TEST(KeptOps, AFreedSlotKeepsAgainFromItsNewTime) {
  KeptOps kept(2);
  auto ops = std::make_unique<OpBlock[]>(2);
  ASSERT_TRUE(kept.keep(0, &ops[0], kT0));
  ASSERT_EQ(kept.take_back(0), &ops[0]);
  ASSERT_TRUE(kept.keep(0, &ops[1], kT0 + microseconds(50)));
  EXPECT_EQ(kept.steal(1, kT0 + microseconds(10)), nullptr);
  EXPECT_EQ(kept.steal(1, kT0 + microseconds(50)), &ops[1]);
}

// Keepers keep op after op and take each back; thieves take any they can.
// Every op must run exactly once: with its keeper, or with one thief.
TEST(KeptOps, RacingKeepersAndThievesLoseAndDuplicateNothing) {
  constexpr int kKeepers = 2, kThieves = 2, kOpsEach = 20000;
  KeptOps kept(kKeepers + kThieves);
  auto ops = std::make_unique<OpBlock[]>(kKeepers * kOpsEach);
  std::vector<std::atomic<int>> ran(kKeepers * kOpsEach);
  std::atomic<int> keepers_left{kKeepers};
  std::vector<std::thread> threads;
  for (int k = 0; k < kKeepers; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < kOpsEach; ++i) {
        OpBlock* op = &ops[k * kOpsEach + i];
        if (!kept.keep(k, op, SpinClock::now())) {
          ran[op - ops.get()].fetch_add(1);
          continue;
        }
        if (i % 7 == 0) std::this_thread::yield();  // a chain that runs on meanwhile
        if (OpBlock* back = kept.take_back(k)) ran[back - ops.get()].fetch_add(1);
      }
      keepers_left.fetch_sub(1);
    });
  }
  for (int t = 0; t < kThieves; ++t) {
    threads.emplace_back([&, t] {
      const int me = kKeepers + t;
      while (keepers_left.load() != 0) {
        if (OpBlock* op = kept.steal(me, SpinClock::now())) ran[op - ops.get()].fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(kept.any());
  for (int i = 0; i < kKeepers * kOpsEach; ++i) ASSERT_EQ(ran[i].load(), 1) << "op " << i;
}

}  // namespace
}  // namespace depengine::detail
