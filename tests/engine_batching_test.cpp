// Batched pushes: the PushBuffer mechanism on its own, and the guarantees the
// threaded engine keeps while it holds pushes back (a held push still runs
// without a further call, and a push that returned is ordered before any
// push that starts after it, from whichever thread).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <semaphore>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include <depengine/engine.h>

#include "engine/dependency_tracker.h"
#include "engine/flush_timer.h"
#include "engine/push_buffer.h"
#include "sync/spin_wait.h"
#include "tests/support/contention_hold.h"

namespace depengine {
namespace {

using detail::Contention;
using detail::Entry;
using detail::OpBlock;
using detail::PushBuffer;
using detail::ReadyList;
using detail::VarState;

// ---------------------------------------------------------------- mechanism

// An op touching `vars` (sorted by address, as make_op leaves them).
std::unique_ptr<OpBlock> make_op(std::vector<VarState*> vars, bool write) {
  auto op = std::make_unique<OpBlock>();
  std::sort(vars.begin(), vars.end());
  for (VarState* var : vars) {
    Entry& e = op->entries.emplace_back();
    e.var = var;
    e.write = write;
  }
  for (Entry& e : op->entries) e.op = op.get();
  return op;
}

std::vector<OpBlock*> drain(ReadyList& ready) {
  std::vector<OpBlock*> ops;
  while (!ready.empty()) ops.push_back(ready.pop());
  return ops;
}

TEST(PushBuffer, AVariableIsClaimedByOneBufferAtATime) {
  VarState v, w;
  std::atomic<std::size_t> sealed{0};
  PushBuffer a(sealed), b(sealed);
  auto on_v = make_op({&v}, true);
  auto on_w = make_op({&w}, true);
  auto on_both = make_op({&v, &w}, true);
  EXPECT_TRUE(a.claim(*on_v));
  EXPECT_TRUE(a.claim(*on_v));  // again: it holds it
  EXPECT_FALSE(b.claim(*on_v));
  EXPECT_TRUE(b.claim(*on_w));
  EXPECT_FALSE(a.claim(*on_both));
  EXPECT_FALSE(b.claim(*on_both));
  EXPECT_EQ(v.claim.load(), &a);
  EXPECT_EQ(w.claim.load(), &b);
}

TEST(PushBuffer, FlushQueuesTheBatchInPushOrderAndGrantsWhatCanStart) {
  VarState v, w;
  std::atomic<std::size_t> sealed{0};
  PushBuffer buffer(sealed);
  auto write_v = make_op({&v}, true);
  auto read_v = make_op({&v}, false);
  auto write_vw = make_op({&v, &w}, true);
  auto read_w = make_op({&w}, false);
  for (OpBlock* op : {write_v.get(), read_v.get(), write_vw.get(), read_w.get()}) {
    ASSERT_TRUE(buffer.claim(*op));
    buffer.add(op);
  }
  EXPECT_EQ(v.head, nullptr) << "nothing is queued before the flush";

  ReadyList ready;
  EXPECT_EQ(buffer.flush(ready), 4u);
  EXPECT_TRUE(buffer.empty());
  EXPECT_EQ(drain(ready), std::vector<OpBlock*>{write_v.get()});
  std::vector<OpBlock*> queue_v;
  for (Entry* e = v.head; e != nullptr; e = e->next) queue_v.push_back(e->op);
  EXPECT_EQ(queue_v, (std::vector<OpBlock*>{write_v.get(), read_v.get(), write_vw.get()}));
  EXPECT_EQ(v.batch_tail, nullptr);

  // Completing the first write lets the read start; the second write waits
  // for it, and the read of w for that write.
  detail::dependency::remove_completed(v, write_v->entries[0], ready);
  ready.settle();
  EXPECT_EQ(drain(ready), std::vector<OpBlock*>{read_v.get()});
  detail::dependency::remove_completed(v, read_v->entries[0], ready);
  ready.settle();
  EXPECT_EQ(drain(ready), std::vector<OpBlock*>{write_vw.get()});
  EXPECT_EQ(read_w->pending.load(), 1);
}

TEST(PushBuffer, IsFullAtItsOpOrVariableLimit) {
  std::vector<VarState> vars(PushBuffer::kMaxVars);
  std::vector<std::unique_ptr<OpBlock>> ops;
  std::atomic<std::size_t> sealed{0};
  PushBuffer by_ops(sealed), by_vars(sealed);
  for (std::size_t i = 0; i < PushBuffer::kMaxOps; ++i) {
    EXPECT_FALSE(by_ops.full());
    ops.push_back(make_op({&vars[0]}, true));
    ASSERT_TRUE(by_ops.claim(*ops.back()));
    by_ops.add(ops.back().get());
  }
  EXPECT_TRUE(by_ops.full());
  ReadyList ready;
  by_ops.flush(ready);

  for (VarState& var : vars) {
    EXPECT_FALSE(by_vars.full());
    ops.push_back(make_op({&var}, true));
    var.claim.store(nullptr);
    ASSERT_TRUE(by_vars.claim(*ops.back()));
    by_vars.add(ops.back().get());
  }
  EXPECT_TRUE(by_vars.full());
  by_vars.flush(ready);
}

// The hint that steers a frontend's waits: whether most ops of the batch
// registered last waited for earlier ones.
TEST(PushBuffer, TellsWhetherMostOpsOfTheLastBatchRegisteredWaited) {
  VarState v, w, x;
  std::atomic<std::size_t> sealed{0};
  PushBuffer buffer(sealed);
  std::vector<std::unique_ptr<OpBlock>> ops;
  ReadyList ready;
  auto push_batch = [&](std::vector<VarState*> written) {
    for (VarState* var : written) {
      ops.push_back(make_op({var}, true));
      ASSERT_TRUE(buffer.claim(*ops.back()));
      buffer.add(ops.back().get());
    }
    buffer.flush(ready);
  };
  EXPECT_FALSE(buffer.ops_mostly_waited());
  push_batch({&v, &w});  // both start
  EXPECT_FALSE(buffer.ops_mostly_waited());
  push_batch({&v, &v, &v});  // all wait behind the first write of v
  EXPECT_TRUE(buffer.ops_mostly_waited());
  push_batch({&x, &w});  // one of two waits, behind the first write of w
  EXPECT_FALSE(buffer.ops_mostly_waited());
}

// One buffer whose ops all write one variable.
struct OneVariable {
  VarState v;
  std::atomic<std::size_t> sealed{0};
  PushBuffer buffer{sealed};
  std::vector<std::unique_ptr<OpBlock>> ops;

  void push() {
    ops.push_back(make_op({&v}, true));
    ASSERT_TRUE(buffer.claim(*ops.back()));
    buffer.add(ops.back().get());
  }
  /// Seals batches of two ops until every slot is taken, the last batch
  /// staying current; returns how many were sealed.
  std::size_t fill_every_slot() {
    std::size_t batches = 0;
    for (;;) {
      push();
      push();
      if (!buffer.seal()) return batches;
      ++batches;
    }
  }
  /// A thread that takes the registration lock to register the sealed
  /// batches (`registered` of them) and stops at the variable's lock, taken
  /// here, until the caller unlocks v.lock; returns once it holds the
  /// registration lock (or after 20 s: the caller asserts registering()).
  std::thread stopped_registrant(std::size_t& registered) {
    v.lock.lock();
    std::thread registrant([this, &registered] {
      ReadyList ready;
      registered = buffer.register_sealed(ready);
    });
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!buffer.registering() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    return registrant;
  }
  /// After the owner sealed its current batch (two ops) into a slot that a
  /// registrant freed: that batch alone is left, and registering it
  /// completes the queue in push order.
  void expect_only_the_owners_batch_left() {
    EXPECT_TRUE(buffer.empty());
    EXPECT_EQ(sealed.load(), 1u);
    ReadyList ready;
    EXPECT_EQ(buffer.register_sealed(ready), 2u);
    EXPECT_EQ(queue(), pushed());
    EXPECT_FALSE(buffer.maybe_holds_ops());
  }
  /// After the owner's seal_making_room raced with another thread's
  /// register_sealed (`by_owner` and `by_registrant` registered): if the
  /// owner waited for room, the other thread registered every sealed batch
  /// and only the owner's is left; else whoever took the registration lock
  /// first registered, and nothing is lost or reordered.
  void expect_room_made(bool owner_waited, std::size_t by_owner, std::size_t by_registrant, std::size_t batches,
                        const char* why_not_waited) {
    if (owner_waited) {
      EXPECT_EQ(by_owner, 0u) << why_not_waited;
      EXPECT_EQ(by_registrant, 2 * batches);
      expect_only_the_owners_batch_left();
    } else {
      ReadyList ready;
      EXPECT_EQ(by_owner + by_registrant + buffer.register_sealed(ready), 2 * batches + 2);
      EXPECT_EQ(queue(), pushed());
    }
  }
  /// The ops in the variable's queue, in its order.
  std::vector<OpBlock*> queue() const {
    std::vector<OpBlock*> queued;
    for (Entry* e = v.head; e != nullptr; e = e->next) queued.push_back(e->op);
    return queued;
  }
  /// Every op pushed, in push order.
  std::vector<OpBlock*> pushed() const {
    std::vector<OpBlock*> all;
    for (const auto& op : ops) all.push_back(op.get());
    return all;
  }
};

TEST(PushBuffer, SealedBatchesAreRegisteredOldestFirstAndTheCurrentOneOnlyByAFlush) {
  OneVariable one;
  PushBuffer& buffer = one.buffer;
  one.push();
  one.push();
  ASSERT_TRUE(buffer.seal());
  one.push();
  ASSERT_TRUE(buffer.seal());
  one.push();  // the current batch
  EXPECT_EQ(one.sealed.load(), 2u);
  EXPECT_TRUE(buffer.has_sealed());

  ReadyList ready;
  EXPECT_EQ(buffer.register_sealed(ready), 3u);
  EXPECT_EQ(one.sealed.load(), 0u);
  EXPECT_FALSE(buffer.has_sealed());
  EXPECT_TRUE(buffer.maybe_holds_ops());
  EXPECT_EQ(buffer.flush(ready), 1u);
  EXPECT_FALSE(buffer.maybe_holds_ops());
  EXPECT_EQ(one.queue(), one.pushed());
}

TEST(PushBuffer, AFlushMakesRoomWhenEverySlotIsSealed) {
  OneVariable one;
  do {
    one.push();
  } while (one.buffer.seal());
  EXPECT_GT(one.sealed.load(), 1u);
  ReadyList ready;
  EXPECT_EQ(one.buffer.flush(ready), one.ops.size());
  EXPECT_EQ(one.queue(), one.pushed());
}

// The flush timer's check flushes a buffer whose ops waited a whole period
// with nothing registered; during a registration it neither waits (the
// registrant may have lost its core) nor flushes, and reports ops held.
TEST(PushBuffer, AStalenessCheckFlushesOnlyWhatWaitedAndNeverWaitsForARegistrant) {
  OneVariable one;
  PushBuffer& buffer = one.buffer;
  ReadyList ready;
  bool holds_ops = false;
  one.push();
  EXPECT_EQ(buffer.flush_if_stale(ready, holds_ops), 1u);  // nothing registered since the last check
  EXPECT_FALSE(holds_ops);
  one.push();
  ASSERT_TRUE(buffer.seal());
  one.push();  // the current batch

  std::size_t by_registrant = 0;
  std::thread registrant = one.stopped_registrant(by_registrant);
  ASSERT_TRUE(buffer.registering());
  std::atomic<bool> checked{false};
  std::size_t by_check = 1;
  std::thread check([&] {
    ReadyList its_ready;
    by_check = buffer.flush_if_stale(its_ready, holds_ops);
    checked = true;
  });
  // It returns while the registrant still holds the lock (within seconds:
  // it is not timed, it must not wait for the unlock below).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!checked.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  EXPECT_TRUE(checked.load());
  one.v.lock.unlock();
  check.join();
  registrant.join();
  EXPECT_EQ(by_check, 0u);
  EXPECT_TRUE(holds_ops);
  EXPECT_EQ(by_registrant, 1u);

  // A registration since the last look: not stale yet; the next look is.
  EXPECT_EQ(buffer.flush_if_stale(ready, holds_ops), 0u);
  EXPECT_TRUE(holds_ops);
  EXPECT_EQ(buffer.flush_if_stale(ready, holds_ops), 1u);
  EXPECT_FALSE(holds_ops);
  EXPECT_EQ(one.queue(), one.pushed());
}

// With every slot taken, the owner registers the oldest batch only and seals
// the current one; the rest wait for a worker, and order is kept.
TEST(PushBuffer, SealingWithEverySlotTakenRegistersTheOldestBatchOnly) {
  OneVariable one;
  PushBuffer& buffer = one.buffer;
  const std::size_t batches = one.fill_every_slot();
  ASSERT_GT(batches, 1u);
  ReadyList ready;
  EXPECT_EQ(buffer.seal_making_room(ready, {}), 2u);
  EXPECT_EQ(one.sealed.load(), batches);  // one registered, the current one sealed
  EXPECT_EQ(one.queue().size(), 2u);
  EXPECT_TRUE(buffer.empty());
  EXPECT_EQ(buffer.register_sealed(ready), one.ops.size() - 2);
  EXPECT_EQ(one.queue(), one.pushed());
  EXPECT_FALSE(buffer.maybe_holds_ops());
}

// With every slot taken while another thread registers, the owner may wait
// for that registrant to free a slot instead of registering itself: it then
// seals into the freed slot, registers nothing, and order is kept; whether
// it spins or yields while it waits.
class SealingWithEverySlotTaken : public ::testing::TestWithParam<bool> {};

INSTANTIATE_TEST_SUITE_P(PushBuffer, SealingWithEverySlotTaken, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Yielding" : "Spinning"; });

TEST_P(SealingWithEverySlotTaken, WaitsForARegistrantAtWork) {
  OneVariable one;
  PushBuffer& buffer = one.buffer;
  const std::size_t batches = one.fill_every_slot();
  ASSERT_GT(batches, 1u);

  std::size_t by_registrant = 0;
  std::thread registrant = one.stopped_registrant(by_registrant);
  ASSERT_TRUE(buffer.registering());

  std::atomic<bool> owner_done{false};
  std::size_t by_owner = 1;
  std::thread owner([&] {
    ReadyList ready;
    by_owner = buffer.seal_making_room(ready, {.spin = std::chrono::seconds(100), .yield = GetParam()});
    owner_done = true;
  });
  // No slot is free until the registrant gets on.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(owner_done.load());
  one.v.lock.unlock();
  owner.join();
  registrant.join();

  EXPECT_EQ(by_owner, 0u);
  EXPECT_EQ(by_registrant, 2 * batches);  // the batches sealed when it began
  one.expect_only_the_owners_batch_left();
}

// With `for_workers`, the owner waits for a slot even while nobody
// registers, for a worker that runs out of work to register; after that it
// seals into the freed slot and registers nothing, and order is kept. Its
// spin ends early only if it lost its core (sync/spin_wait.h): it then
// registers the oldest batch itself, and order is kept too.
TEST(PushBuffer, SealingWithEverySlotTakenForWorkersWaitsForOneToRegister) {
  OneVariable one;
  PushBuffer& buffer = one.buffer;
  const std::size_t batches = one.fill_every_slot();
  ASSERT_GT(batches, 1u);
  wait_out_contention_hold();
  const std::uint64_t losses_before = Contention::process().losses();

  std::size_t by_owner = 1;
  std::thread owner([&] {
    ReadyList ready;
    by_owner = buffer.seal_making_room(ready, {.spin = std::chrono::seconds(100), .for_workers = true});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ReadyList ready;
  const std::size_t by_worker = buffer.register_sealed(ready);
  owner.join();

  one.expect_room_made(Contention::process().losses() == losses_before, by_owner, by_worker, batches,
                       "the owner registered instead of waiting");
}

// Workers that complete nothing are not running: the owner stops waiting
// for them within a few stall windows, not at the end of its spin, says
// so, and registers the oldest batch itself; order is kept.
TEST(PushBuffer, SealingWithEverySlotTakenForWorkersStopsWaitingWhenTheyStandStill) {
  OneVariable one;
  PushBuffer& buffer = one.buffer;
  const std::size_t batches = one.fill_every_slot();
  const detail::InFlightCounter workers;  // nothing completes
  wait_out_contention_hold();
  const std::uint64_t losses_before = Contention::process().losses();
  ReadyList ready;
  bool stalled = false;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(buffer.seal_making_room(ready, {.spin = std::chrono::seconds(100), .for_workers = true, .workers = &workers},
                                    &stalled),
            2u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(50));
  // Only a spin that lost its core ends unstalled (and then no thread spins for a while).
  EXPECT_TRUE(stalled || Contention::process().losses() > losses_before);
  EXPECT_EQ(one.sealed.load(), batches);
  EXPECT_EQ(buffer.register_sealed(ready), one.ops.size() - 2);
  EXPECT_EQ(one.queue(), one.pushed());
}

// Workers that keep completing are waited for, and one that registers frees
// the slot. This VM's vCPUs sometimes pause for longer than a stall window,
// which reads as a stall: then the owner may have made room itself.
TEST(PushBuffer, SealingWithEverySlotTakenForWorkersWaitsWhileTheyComplete) {
  OneVariable one;
  PushBuffer& buffer = one.buffer;
  const std::size_t batches = one.fill_every_slot();
  detail::InFlightCounter workers;
  wait_out_contention_hold();
  const std::uint64_t losses_before = Contention::process().losses();
  std::atomic<bool> owner_started{false};
  std::atomic<bool> owner_done{false};
  std::size_t by_owner = 1;
  bool stalled = true;
  std::thread owner([&] {
    ReadyList ready;
    owner_started = true;
    by_owner = buffer.seal_making_room(
        ready, {.spin = std::chrono::seconds(100), .for_workers = true, .workers = &workers}, &stalled);
    owner_done = true;
  });
  // Completions until the owner is done, as a worker at work makes them,
  // also while this thread registers.
  std::thread completing([&] {
    while (!owner_done.load()) workers.add_completed();
  });
  while (!owner_started.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ReadyList ready;
  const std::size_t by_worker = buffer.register_sealed(ready);
  owner.join();
  completing.join();
  one.expect_room_made(!stalled && Contention::process().losses() == losses_before, by_owner, by_worker, batches,
                       "the owner stopped waiting for workers at work");
}

// When no worker comes within the wait, the owner makes room itself.
TEST(PushBuffer, SealingWithEverySlotTakenForWorkersRegistersTheOldestWhenNoneComes) {
  OneVariable one;
  PushBuffer& buffer = one.buffer;
  const std::size_t batches = one.fill_every_slot();
  ReadyList ready;
  EXPECT_EQ(buffer.seal_making_room(ready, {.spin = std::chrono::microseconds(2), .for_workers = true}), 2u);
  EXPECT_EQ(one.sealed.load(), batches);
  EXPECT_EQ(one.queue().size(), 2u);
  EXPECT_EQ(buffer.register_sealed(ready), one.ops.size() - 2);
  EXPECT_EQ(one.queue(), one.pushed());
}

// ---------------------------------------------------------------- timer

using detail::FlushTimer;
using std::chrono::microseconds;

// While ticks find ops waiting and nothing to flush, the period doubles up
// to its maximum; a tick that flushes, or finds nothing buffered, resets it.
TEST(FlushTimer, PeriodBacksOffWhileNothingIsStaleAndResetsOtherwise) {
  const microseconds base(200), max(800);
  const FlushTimer::Tick progressing{.pending = true, .flushed = false};
  EXPECT_EQ(FlushTimer::next_period(base, progressing, base, max), microseconds(400));
  EXPECT_EQ(FlushTimer::next_period(microseconds(400), progressing, base, max), max);
  EXPECT_EQ(FlushTimer::next_period(max, progressing, base, max), max);
  EXPECT_EQ(FlushTimer::next_period(max, {.pending = true, .flushed = true}, base, max), base);
  EXPECT_EQ(FlushTimer::next_period(max, {.pending = false, .flushed = true}, base, max), base);
  EXPECT_EQ(FlushTimer::next_period(max, {}, base, max), base);
}

// An armed timer ticks until a tick finds nothing buffered (then once more,
// for a push it may have missed), and then stays asleep until armed again.
TEST(FlushTimer, TicksWhileArmedAndDisarmsWhenNothingIsBuffered) {
  std::atomic<int> ticks{0};
  std::atomic<int> pending_ticks{3};
  FlushTimer timer(microseconds(200), microseconds(800), [&] {
    ticks.fetch_add(1);
    return FlushTimer::Tick{.pending = pending_ticks.fetch_sub(1) > 0, .flushed = false};
  });
  const auto wait_for_ticks = [&](int n) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ticks.load() < n && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return ticks.load();
  };
  timer.arm();
  EXPECT_EQ(wait_for_ticks(5), 5);  // three pending, one empty, the second look
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ticks.load(), 5);  // disarmed
  pending_ticks = 0;
  timer.arm();
  EXPECT_EQ(wait_for_ticks(7), 7);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ticks.load(), 7);
}

// ---------------------------------------------------------------- engine

EngineOptions threaded(int threads) { return {.cpu_threads = threads, .read_environment = false}; }

// A push held back while a worker is busy must still run, with nothing
// else pushed or waited for: here the running op waits for it (through a
// channel the engine does not see) and would otherwise never finish.
TEST(Batching, AHeldPushRunsWhileTheFrontendMakesNoFurtherCall) {
  Engine engine(threaded(2));
  Var busy = engine.new_var(), other = engine.new_var();
  std::atomic<bool> started{false}, ran{false}, saw_it{false};
  engine.push(
      [&](RunContext&) {
        started = true;
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!ran && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(std::chrono::microseconds(50));
        saw_it = ran.load();
      },
      {}, {busy});
  while (!started) std::this_thread::yield();
  engine.push([&](RunContext&) { ran = true; }, {}, {other});
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!ran && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(std::chrono::microseconds(50));
  EXPECT_TRUE(ran.load()) << "the held push never ran";
  engine.wait_all();
  EXPECT_TRUE(saw_it);
}

// Thread A's push returns, A tells B through an atomic flag, B pushes: B's
// op must see A's, though A's may still sit in A's buffer.
TEST(Batching, APushThatReturnedIsOrderedBeforeAnotherThreadsLaterPush) {
  for (int threads : {1, 2, -1}) {  // -1: two threads, batching off
    EngineOptions options = threaded(threads < 0 ? 2 : threads);
    options.batch_pushes = threads > 0;
    Engine engine(options);
    constexpr int kRounds = 2000;
    std::vector<Var> vars;
    for (int i = 0; i < 8; ++i) vars.push_back(engine.new_var());
    std::vector<int> values(vars.size(), 0);
    std::vector<int> seen(kRounds, -1);
    std::atomic<int> published{-1};
    std::thread writer([&] {
      for (int round = 0; round < kRounds; ++round) {
        const std::size_t v = static_cast<std::size_t>(round) % vars.size();
        engine.push([&values, v, round](RunContext&) { values[v] = round; }, {}, {vars[v]});
        published.store(round, std::memory_order_release);
        while (published.load(std::memory_order_acquire) != -2 - round) std::this_thread::yield();
      }
    });
    for (int round = 0; round < kRounds; ++round) {
      while (published.load(std::memory_order_acquire) != round) std::this_thread::yield();
      const std::size_t v = static_cast<std::size_t>(round) % vars.size();
      engine.push([&, v, round](RunContext&) { seen[static_cast<std::size_t>(round)] = values[v]; }, {vars[v]}, {});
      published.store(-2 - round, std::memory_order_release);
    }
    writer.join();
    engine.wait_all();
    for (int round = 0; round < kRounds; ++round) {
      ASSERT_EQ(seen[static_cast<std::size_t>(round)], round) << "round " << round << ", " << threads << " threads";
    }
  }
}

// Threads beyond the engine's buffers register each push at once; they and
// buffered threads share variables, in push order.
TEST(Batching, ManyPushingThreadsShareVariablesInPushOrder) {
  Engine engine(threaded(2));
  Var shared = engine.new_var();
  constexpr int kThreads = 300, kPushes = 20;
  std::vector<int> log;
  // All alive at once (so that they are distinct threads), taking turns.
  std::vector<std::unique_ptr<std::binary_semaphore>> turn;
  for (int t = 0; t <= kThreads; ++t) turn.push_back(std::make_unique<std::binary_semaphore>(t == 0 ? 1 : 0));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      turn[static_cast<std::size_t>(t)]->acquire();
      for (int i = 0; i < kPushes; ++i) {
        const int stamp = t * kPushes + i;
        engine.push([&log, stamp](RunContext&) { log.push_back(stamp); }, {}, {shared});
      }
      turn[static_cast<std::size_t>(t) + 1]->release();
    });
  }
  for (auto& th : threads) th.join();
  engine.wait_all();
  ASSERT_EQ(log.size(), static_cast<std::size_t>(kThreads * kPushes));
  for (int i = 0; i < kThreads * kPushes; ++i) ASSERT_EQ(log[static_cast<std::size_t>(i)], i);
}

// Ops pushed from inside an op are registered when it completes, and wait
// for nothing else.
TEST(Batching, PushesFromInsideAnOpRunWithoutAFrontendCall) {
  Engine engine(threaded(2));
  Var parent = engine.new_var(), child = engine.new_var();
  std::atomic<int> children{0};
  engine.push(
      [&](RunContext&) {
        for (int i = 0; i < 100; ++i) engine.push([&](RunContext&) { ++children; }, {}, {child});
      },
      {}, {parent});
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (children < 100 && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(std::chrono::microseconds(50));
  EXPECT_EQ(children.load(), 100);
  engine.wait_all();
}

// Threads that pushed and ended leave their batches behind: they run with
// nobody waiting, and the engine's destructor waits for them.
TEST(Batching, OpsHeldByThreadsThatEndedStillRun) {
  constexpr int kThreads = 8, kPushes = 50;
  std::atomic<int> ran{0};
  auto push_from_threads = [&](Engine& engine) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        Var v = engine.new_var();
        for (int i = 0; i < kPushes; ++i) engine.push([&](RunContext&) { ++ran; }, {}, {v});
      });
    }
    for (auto& th : threads) th.join();
  };
  {
    Engine engine(threaded(2));
    push_from_threads(engine);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ran < kThreads * kPushes && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    EXPECT_EQ(ran.load(), kThreads * kPushes) << "without any blocking call";
    ran = 0;
    push_from_threads(engine);
  }
  EXPECT_EQ(ran.load(), kThreads * kPushes) << "by the end of the destructor";
}

// A push never runs an op (it does not wait for computation), however the
// engine's threads are placed: here the frontend shares the CPU of the one
// worker, which an op holds, and a queued ready op waits for what the
// frontend does after its pushes, as a program's op may. Run inside a
// push, that op could never finish; it gives up after 20 s, and the test
// fails.
TEST(Batching, APushNeverRunsAnOpEvenOnTheWorkersCpu) {
#if defined(__linux__)
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: one worker leaves no spare core";
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  std::atomic<int> worker_cpu{-1};
  std::atomic<bool> pushes_done{false}, ran_in_a_push{false};
  std::binary_semaphore hold{0};
  Engine engine(threaded(1));
  engine.push([&](RunContext&) {
    worker_cpu = sched_getcpu();
    hold.acquire();
  }, {}, {engine.new_var()});
  while (worker_cpu.load() < 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(worker_cpu.load(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const std::thread::id frontend = std::this_thread::get_id();
  engine.push([&](RunContext&) {
    if (std::this_thread::get_id() == frontend && !pushes_done.load()) ran_in_a_push = true;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!pushes_done.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  }, {}, {engine.new_var()});
  std::vector<Var> vars;
  for (int i = 0; i < 64; ++i) vars.push_back(engine.new_var());
  std::atomic<int> ran{0};
  constexpr int kOps = 4000;
  for (int i = 0; i < kOps; ++i) engine.push([&](RunContext&) { ++ran; }, {}, {vars[i % vars.size()]});
  pushes_done = true;
  hold.release();
  engine.wait_all();
  sched_setaffinity(0, sizeof(before), &before);
  EXPECT_FALSE(ran_in_a_push.load());
  EXPECT_EQ(ran.load(), kOps);
#else
  GTEST_SKIP() << "needs sched_setaffinity";
#endif
}

}  // namespace
}  // namespace depengine
