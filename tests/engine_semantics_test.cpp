// The contract of DESIGN.md, checked on both engines.

#include <gtest/gtest.h>

#include <sched.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <depengine/engine.h>

#include "sync/spin_wait.h"
#include "tests/support/engine_setups.h"
#include "tests/support/held_worker.h"
#include "tests/support/one_cpu.h"

namespace depengine {
namespace {

class Semantics : public EngineSetupTest {
 protected:
  EngineOptions options(int threads = 2) const {
    return {.kind = kind(), .cpu_threads = threads, .read_environment = false};
  }
};

INSTANTIATE_TEST_SUITE_P(Engines, Semantics, kEngineSetups, engine_setup_name);

TEST_P(Semantics, ReadmeExampleComputes) {
  Engine engine(options());
  int a = 0, b = 0;
  Var va = engine.new_var("a"), vb = engine.new_var("b");
  engine.push([&](RunContext&) { a = 20; }, {}, {va});
  engine.push([&](RunContext&) { b = a + 22; }, {va}, {vb});
  engine.wait_to_read(vb);
  EXPECT_EQ(b, 42);
}

TEST_P(Semantics, WritesToOneVariableTakeEffectInPushOrder) {
  Engine engine(options(4));
  Var v = engine.new_var();
  std::vector<int> order;
  for (int i = 0; i < 2000; ++i) engine.push([&order, i](RunContext&) { order.push_back(i); }, {}, {v});
  engine.wait_to_read(v);
  ASSERT_EQ(order.size(), 2000u);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(order[i], i);
}

TEST_P(Semantics, ReadsSeeTheLatestEarlierWriteAndNoLaterOne) {
  Engine engine(options(4));
  Var v = engine.new_var();
  int value = 0;
  std::vector<int> seen(300, -1);
  for (int round = 0; round < 100; ++round) {
    engine.push([&value, round](RunContext&) { value = round; }, {}, {v});
    for (int r = 0; r < 3; ++r) {
      engine.push([&, round, r](RunContext&) { seen[round * 3 + r] = value; }, {v}, {});
    }
  }
  engine.wait_all();
  for (int i = 0; i < 300; ++i) EXPECT_EQ(seen[i], i / 3) << i;
}

TEST_P(Semantics, WaitToWriteAlsoWaitsForReads) {
  Engine engine(options());
  Var v = engine.new_var();
  std::atomic<int> reads_done{0};
  for (int i = 0; i < 8; ++i) {
    engine.push([&](RunContext&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      reads_done.fetch_add(1);
    }, {v}, {});
  }
  engine.wait_to_write(v);
  EXPECT_EQ(reads_done.load(), 8);
}

TEST_P(Semantics, WaitToReadDoesNotWaitForUnrelatedWork) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine runs everything at push";
  Engine engine(options());
  Var slow = engine.new_var(), fast = engine.new_var();
  std::atomic<bool> release{false}, slow_done{false};
  // Bounded, so that a failure shows as a failed check, not a hang.
  engine.push([&](RunContext&) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!release.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    slow_done.store(true);
  }, {}, {slow});
  int value = 0;
  engine.push([&](RunContext&) { value = 7; }, {}, {fast});
  engine.wait_to_read(fast);  // returns although `slow` is still running
  EXPECT_FALSE(slow_done.load());
  EXPECT_EQ(value, 7);
  release.store(true);
  engine.wait_all();
}

TEST_P(Semantics, WaitAllWaitsForEverything) {
  Engine engine(options(4));
  std::vector<Var> vars;
  for (int i = 0; i < 16; ++i) vars.push_back(engine.new_var());
  std::atomic<int> count{0};
  for (int i = 0; i < 5000; ++i) {
    engine.push([&](RunContext&) { count.fetch_add(1, std::memory_order_relaxed); }, {vars[(i + 1) % 16]},
                {vars[i % 16]});
  }
  engine.wait_all();
  EXPECT_EQ(count.load(), 5000);
}

TEST_P(Semantics, WaitAllRunsQueuedOpsOnTheWaitingThread) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine runs everything at push";
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: its only worker leaves no core to help on";
  Engine engine(options(1));
  std::atomic<bool> blocker_started{false}, helper_ran{false};
  std::thread::id helper_thread;
  // The only worker is held by `blocker` until `helper` has run: only the
  // thread in wait_all can run `helper` (a bounded wait turns a regression
  // into a failure, not a hang).
  engine.push([&](RunContext&) {
    blocker_started = true;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!helper_ran && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  }, {}, {engine.new_var()});
  while (!blocker_started) std::this_thread::yield();
  engine.push([&](RunContext& ctx) {
    EXPECT_EQ(ctx.device, Device::cpu());
    helper_thread = std::this_thread::get_id();
    helper_ran = true;
  }, {}, {engine.new_var()});
  engine.wait_all();
  EXPECT_TRUE(helper_ran);
  EXPECT_EQ(helper_thread, std::this_thread::get_id());
}

// Ops that each wait for the others of a group of two: they finish only if
// the engine runs them at the same time. The wait is bounded, so a failure
// shows as met() false instead of a hang.
class Rendezvous {
 public:
  explicit Rendezvous(std::chrono::seconds patience) : patience_(patience) {}
  std::function<void(RunContext&)> op() {
    return [this](RunContext&) {
      arrived_.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + patience_;
      while (arrived_.load() < 2) {
        if (std::chrono::steady_clock::now() > deadline) { met_ = false; return; }
        std::this_thread::yield();
      }
    };
  }
  bool met() const { return met_.load(); }

 private:
  const std::chrono::seconds patience_;
  std::atomic<int> arrived_{0};
  std::atomic<bool> met_{true};
};

TEST_P(Semantics, ConcurrentReadersMayOverlap) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine runs one op at a time";
  Engine engine(options(2));
  Var v = engine.new_var();
  Rendezvous readers(std::chrono::seconds(20));
  for (int i = 0; i < 2; ++i) engine.push(readers.op(), {v}, {});
  engine.wait_all();
  EXPECT_TRUE(readers.met());
}

// A worker stuck in a long op makes no progress: a frontend that has every
// batch slot taken by ops waiting behind it stops waiting for the worker
// (docs/architecture.md, "Waiting") and registers the batches itself, so
// that its pushes go on; it runs none of the ready ops (a push does not
// wait for computation), which run once the worker is back.
TEST_P(Semantics, PushesGoOnWhileTheWorkerStandsStillAndRunNothing) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine runs every op on the pushing thread";
  Engine engine(options(1));
  HeldWorker held(engine);
  const Var blocked = held.var();
  // Batches whose ops mostly wait behind the stuck op, each with one ready op.
  const std::thread::id frontend = std::this_thread::get_id();
  std::atomic<int> ran{0}, ran_here{0};
  constexpr int kPushes = 20'000;
  std::vector<Var> free_vars;
  for (int i = 0; i < kPushes; ++i) {
    if (i % 8 == 0) {
      free_vars.push_back(engine.new_var());
      engine.push([&](RunContext&) {
        ran.fetch_add(1);
        if (std::this_thread::get_id() == frontend) ran_here.fetch_add(1);
      }, {}, {free_vars.back()});
    } else {
      engine.push([](RunContext&) {}, {blocked}, {});
    }
  }
  EXPECT_EQ(ran_here.load(), 0) << "a push ran an op";
  held.release();
  engine.wait_all();
  EXPECT_EQ(ran.load(), static_cast<int>(free_vars.size()));
}

// While the process's threads lose their cores to other threads, a frontend
// with a core the workers leave over registers its full batches itself
// (docs/architecture.md, "Waiting"), instead of leaving them to a worker
// that must win back its core first; it runs none of their ops.
TEST_P(Semantics, PushesRunNothingWhileTheProcessLosesCores) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine runs every op on the pushing thread";
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs a core beside the one worker";
  Engine engine(options(1));
  HeldWorker held(engine);  // keeps the worker active, so that pushes are batched
  // As a spinner that lost its core records it: a hold of at least 5 ms.
  detail::Contention::process().lost_core(detail::SpinClock::now());
  const std::thread::id frontend = std::this_thread::get_id();
  constexpr int kOps = 64;  // a few batches' worth
  std::atomic<int> ran{0};
  std::atomic<int> ran_here{0};
  std::vector<Var> vars;
  for (int i = 0; i < kOps; ++i) {
    vars.push_back(engine.new_var());
    engine.push([&](RunContext&) {
      ran.fetch_add(1);
      if (std::this_thread::get_id() == frontend) ran_here.fetch_add(1);
    }, {}, {vars.back()});
  }
  EXPECT_EQ(ran_here.load(), 0) << "a push ran an op";
  held.release();
  engine.wait_all();
  EXPECT_EQ(ran.load(), kOps);
}

TEST_P(Semantics, IndependentOpsPushedWhileAWorkerSpinsRunAtOnce) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine runs one op at a time";
  Engine engine(options(2));
  // Right after an op, its worker spins for more and registers the next
  // pushes itself; the two ops made ready then must not both stay with it.
  for (int round = 0; round < 50; ++round) {
    engine.push([](RunContext&) {}, {}, {engine.new_var()});
    engine.wait_all();
    Rendezvous pair(std::chrono::seconds(5));
    for (int i = 0; i < 2; ++i) engine.push(pair.op(), {}, {engine.new_var()});
    engine.wait_all();
    ASSERT_TRUE(pair.met()) << "round " << round;
  }
}

TEST_P(Semantics, PushesFromManyThreadsAreAllRun) {
  Engine engine(options(2));
  constexpr int kThreads = 4, kOps = 5000;
  std::vector<Var> vars;
  std::vector<long> counters(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) vars.push_back(engine.new_var());
  Var shared = engine.new_var();
  long shared_count = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOps; ++i) {
        engine.push([&counters, t](RunContext&) { ++counters[t]; }, {}, {vars[t]});
        if (i % 10 == 0) engine.push([&](RunContext&) { ++shared_count; }, {}, {shared});
      }
    });
  }
  for (auto& th : threads) th.join();
  engine.wait_all();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(counters[t], kOps);
  EXPECT_EQ(shared_count, kThreads * kOps / 10);
}

TEST_P(Semantics, OrderBetweenThreadsIsTheOrderPushesReturned) {
  Engine engine(options(2));
  Var v = engine.new_var();
  std::vector<int> order;
  std::mutex turn;
  int next = 0;
  std::vector<std::thread> threads;
  // Threads take turns (a push returns before the next thread pushes), so
  // the engine must apply the writes in exactly that order.
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 300; ++i) {
        std::lock_guard lock(turn);
        const int ticket = next++;
        engine.push([&order, ticket](RunContext&) { order.push_back(ticket); }, {}, {v});
      }
    });
  }
  for (auto& th : threads) th.join();
  engine.wait_to_read(v);
  ASSERT_EQ(order.size(), 900u);
  for (int i = 0; i < 900; ++i) ASSERT_EQ(order[i], i);
}

TEST_P(Semantics, OperationsMayPushFromInside) {
  Engine engine(options());
  Var v = engine.new_var();
  std::vector<int> order;
  engine.push([&](RunContext&) {
    order.push_back(1);
    engine.push([&](RunContext&) { order.push_back(2); }, {}, {v});
  }, {}, {v});
  engine.wait_all();
  engine.wait_to_read(v);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST_P(Semantics, BlockingCallsFromInsideAnOperationThrow) {
  Engine engine(options());
  Var v = engine.new_var(), w = engine.new_var();
  std::atomic<int> threw{0};
  engine.push([&](RunContext&) {
    try { engine.wait_to_read(w); } catch (const std::logic_error&) { threw.fetch_add(1); }
    try { engine.wait_to_write(w); } catch (const std::logic_error&) { threw.fetch_add(1); }
    try { engine.wait_all(); } catch (const std::logic_error&) { threw.fetch_add(1); }
  }, {}, {v});
  engine.wait_all();
  EXPECT_EQ(threw.load(), 3);
}

TEST_P(Semantics, DestructorWaitsForPushedWork) {
  std::atomic<int> count{0};
  {
    Engine engine(options());
    Var v = engine.new_var();
    for (int i = 0; i < 100; ++i) {
      engine.push([&](RunContext&) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        count.fetch_add(1);
      }, {}, {v});
    }
  }
  EXPECT_EQ(count.load(), 100);
}

TEST_P(Semantics, DeleteReleasesAfterEarlierOperations) {
  Engine engine(options());
  Var v = engine.new_var();
  std::vector<int> events;
  std::mutex m;
  auto log = [&](int e) { std::lock_guard lock(m); events.push_back(e); };
  engine.push([&](RunContext&) { std::this_thread::sleep_for(std::chrono::milliseconds(5)); log(1); }, {}, {v});
  engine.push([&](RunContext&) { std::this_thread::sleep_for(std::chrono::milliseconds(5)); log(2); }, {v}, {});
  engine.delete_var(v, [&] { log(3); });
  engine.wait_all();
  EXPECT_EQ(events, (std::vector<int>{1, 2, 3}));
}

TEST_P(Semantics, DeletedSlotsAreRecycledAndStaleHandlesRejected) {
  Engine engine(options());
  Var old = engine.new_var("old");
  engine.delete_var(old);
  engine.wait_all();
  Var fresh = engine.new_var("fresh");
  EXPECT_EQ(fresh.slot(), old.slot());  // the slot came back...
  EXPECT_NE(fresh, old);                // ...under a new generation
  EXPECT_THROW(engine.push([](RunContext&) {}, {old}, {}), std::invalid_argument);
  EXPECT_NO_THROW(engine.push([](RunContext&) {}, {fresh}, {}));
  EXPECT_EQ(engine.var_name(fresh), "fresh");
  engine.wait_all();
}

TEST_P(Semantics, HigherPriorityRunsFirstAmongReadyOps) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine has no ready queue";
  // Unbatched: each push below is in the ready queue when it returns. A
  // batch may be registered by another thread (the flush timer), and a wait
  // on another variable does not wait for that registration to dispatch.
  EngineOptions unbatched = options(1);
  unbatched.batch_pushes = false;
  Engine engine(unbatched);
  // Occupy the only worker so that the next ops queue up, then release
  // (begun first, else a prioritized op pushed below could be taken before it).
  HeldWorker held(engine);
  std::vector<int> order;
  std::mutex m;
  std::vector<Var> vars;
  for (int i = 0; i < 4; ++i) vars.push_back(engine.new_var());
  const int priorities[4] = {0, 5, -3, 9};
  for (int i = 0; i < 4; ++i) {
    engine.push([&, i](RunContext&) { std::lock_guard lock(m); order.push_back(priorities[i]); }, {}, {vars[i]},
                {.priority = priorities[i]});
  }
  held.release();
  // Not wait_all: its thread would run queued ops beside the worker.
  for (Var v : vars) engine.wait_to_read(v);
  EXPECT_EQ(order, (std::vector<int>{9, 5, 0, -3}));
}

// The ops one completion makes ready are ready at the same time too: the
// worker that completed it continues with the one of highest priority.
TEST_P(Semantics, HigherPriorityRunsFirstAmongOpsOneCompletionMakesReady) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine has no ready queue";
  Engine engine(options(1));
  const Var v = engine.new_var();
  std::vector<int> order;
  std::mutex m;
  const int priorities[4] = {-3, 0, 9, 5};
  engine.push([](RunContext&) { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }, {}, {v});
  for (const int priority : priorities) {
    engine.push([&, priority](RunContext&) {
      const std::lock_guard lock(m);
      order.push_back(priority);
    }, {v}, {}, {.priority = priority});
  }
  engine.wait_to_write(v);
  EXPECT_EQ(order, (std::vector<int>{9, 5, 0, -3}));
}

// The same where the completion's worker keeps the ops of priority 0 for
// their data (PushOptions::bytes, KeptOps): kept ops wait for the op of
// higher priority too. One worker of two is held, so that the other
// runs them all, one after the other.
TEST_P(Semantics, HigherPriorityRunsBeforeAnOpKeptForItsData) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine has no ready queue";
  Engine engine(options(2));
  HeldWorker held(engine);
  const Var v = engine.new_var();
  std::vector<int> order;
  std::mutex m;
  constexpr std::size_t kMuchData = 1 << 20;
  engine.push([](RunContext&) {}, {}, {v}, {.bytes = kMuchData});
  for (const int priority : {0, 0, 9}) {
    engine.push([&, priority](RunContext&) {
      const std::lock_guard lock(m);
      order.push_back(priority);
    }, {v}, {}, {.priority = priority, .bytes = kMuchData});
  }
  engine.wait_to_write(v);
  held.release();
  EXPECT_EQ(order, (std::vector<int>{9, 0, 0}));
}

// Ops on data made ready by one short op's completion: its worker keeps
// those beside the one it continues with, which here waits for them all.
// Other workers take them (KeptOps), whichever comes first in push order.
TEST_P(Semantics, OpsKeptForTheirDataRunWhileTheirKeeperWaitsForThem) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine runs the waiting op first, at its push";
  for (const int setters : {1, 3}) {
    for (const bool waiter_first : {true, false}) {
      for (const int workers : {2, 4}) {
        Engine engine(options(workers));
        const Var v = engine.new_var();
        constexpr std::size_t kSomeData = 64;
        std::atomic<int> set{0};
        std::atomic<bool> seen{false};
        const auto waiter = [&](RunContext&) {
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (set.load() < setters && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
          seen = set.load() == setters;
        };
        const auto setter = [&](RunContext&) { set.fetch_add(1); };
        engine.push([](RunContext&) {}, {}, {v}, {.bytes = kSomeData});
        if (waiter_first) engine.push(waiter, {v}, {}, {.bytes = kSomeData});
        for (int i = 0; i < setters; ++i) engine.push(setter, {v}, {}, {.bytes = kSomeData});
        if (!waiter_first) engine.push(waiter, {v}, {}, {.bytes = kSomeData});
        engine.wait_all();
        EXPECT_TRUE(seen.load()) << setters << " setters, " << workers << " workers, "
                                 << (waiter_first ? "waiter" : "setters") << " pushed first";
      }
    }
  }
}

// A worker takes several ready ops at once; one of higher priority that
// becomes ready while it runs the first (pushed from inside it) runs before
// the others. Waits that run no op on their caller, as in
// HigherPriorityRunsFirstAmongReadyOps.
TEST_P(Semantics, HigherPriorityRunsBeforeOpsAWorkerTookTogether) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine runs every op at push";
  EngineOptions unbatched = options(1);
  unbatched.batch_pushes = false;  // each op is ready when its push returns
  Engine engine(unbatched);
  HeldWorker held(engine);
  std::vector<std::string> order;
  std::mutex m;
  const auto log = [&](const char* name) {
    const std::lock_guard lock(m);
    order.push_back(name);
  };
  const Var a = engine.new_var(), b = engine.new_var(), c = engine.new_var(), urgent = engine.new_var();
  engine.push([&](RunContext&) {
    log("a");
    engine.push([&](RunContext&) { log("urgent"); }, {}, {urgent}, {.priority = 9});
  }, {}, {a});
  engine.push([&](RunContext&) { log("b"); }, {}, {b});
  engine.push([&](RunContext&) { log("c"); }, {}, {c});
  held.release();
  for (const Var v : {a, b, c}) engine.wait_to_read(v);
  engine.wait_to_read(urgent);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "urgent", "b", "c"}));
}

TEST_P(Semantics, RunContextNamesTheDeviceAndOperation) {
  Engine engine(options());
  Var v = engine.new_var();
  std::string name;
  Device device = Device::custom(3);
  engine.push([&](RunContext& ctx) { name = ctx.name; device = ctx.device; }, {}, {v}, {.name = "named op"});
  engine.wait_to_read(v);
  EXPECT_EQ(name, "named op");
  EXPECT_EQ(device, Device::cpu());
}

// Blocks are pooled, and a plain op's name stays in its block after it ran:
// an unnamed op on a reused block must still see no name.
TEST_P(Semantics, AnUnnamedOpHasNoNameAfterNamedOpsRan) {
  Engine engine(options());
  Var v = engine.new_var();
  constexpr int kRounds = 200;
  std::vector<std::string> names;
  for (int i = 0; i < kRounds; ++i) {
    engine.push([&](RunContext& ctx) { names.emplace_back(ctx.name); }, {}, {v}, {.name = "named op"});
    engine.push([&](RunContext& ctx) { names.emplace_back(ctx.name); }, {}, {v});
    if (i % 16 == 0) engine.wait_to_read(v);  // blocks go back to the pool and come out again
  }
  engine.wait_to_read(v);
  ASSERT_EQ(names.size(), 2u * kRounds);
  for (int i = 0; i < kRounds; ++i) {
    EXPECT_EQ(names[2 * i], "named op");
    EXPECT_EQ(names[2 * i + 1], "") << "round " << i;
  }
}

TEST_P(Semantics, AsyncOperationsCompleteFromAnotherThread) {
  Engine engine(options());
  Var v = engine.new_var();
  int value = 0;
  // The I/O thread belongs to the test: the op may still be returning when
  // its completion was already called.
  std::promise<Completion> handoff;
  std::thread io([&value, future = handoff.get_future()]() mutable {
    Completion done = future.get();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    value = 11;
    done();
  });
  engine.push_async([&](RunContext&, Completion done) { handoff.set_value(std::move(done)); }, {}, {v});
  int seen = -1;
  engine.push([&](RunContext&) { seen = value; }, {v}, {});
  engine.wait_all();
  io.join();
  EXPECT_EQ(seen, 11);
}

TEST_P(Semantics, EmptyVarListsAreAllowed) {
  Engine engine(options());
  std::atomic<int> ran{0};
  engine.push([&](RunContext&) { ran.fetch_add(1); }, {}, {});
  std::vector<Var> none;
  engine.push([&](RunContext&) { ran.fetch_add(1); }, none, none);
  engine.wait_all();
  EXPECT_EQ(ran.load(), 2);
}

TEST(EngineOptions, EnvironmentOverridesKindAndThreads) {
  setenv("DEPENGINE_ENGINE", "naive", 1);
  {
    Engine engine;
    EXPECT_EQ(engine.kind(), EngineKind::Naive);
  }
  setenv("DEPENGINE_ENGINE", "threaded", 1);
  setenv("DEPENGINE_CPU_THREADS", "3", 1);
  {
    Engine engine({.kind = EngineKind::Naive});
    EXPECT_EQ(engine.kind(), EngineKind::Threaded);
    EXPECT_EQ(engine.cpu_threads(), 3);
  }
  {
    Engine engine({.kind = EngineKind::Naive, .read_environment = false});
    EXPECT_EQ(engine.kind(), EngineKind::Naive);
  }
  setenv("DEPENGINE_BATCH_PUSHES", "2", 1);
  EXPECT_THROW(Engine{}, std::invalid_argument);
  for (const char* accepted : {"0", "1"}) {
    setenv("DEPENGINE_BATCH_PUSHES", accepted, 1);
    Engine engine;
    Var v = engine.new_var();
    int value = 0;
    engine.push([&](RunContext&) { value = 1; }, {}, {v});
    engine.wait_to_read(v);
    EXPECT_EQ(value, 1) << "DEPENGINE_BATCH_PUSHES=" << accepted;
  }
  unsetenv("DEPENGINE_BATCH_PUSHES");
  setenv("DEPENGINE_ENGINE", "fast", 1);
  EXPECT_THROW(Engine{}, std::invalid_argument);
  setenv("DEPENGINE_ENGINE", "threaded", 1);
  setenv("DEPENGINE_CPU_THREADS", "two", 1);
  EXPECT_THROW(Engine{}, std::invalid_argument);
  unsetenv("DEPENGINE_ENGINE");
  unsetenv("DEPENGINE_CPU_THREADS");
}

TEST(EngineOptions, BadOptionsAreRejected) {
  EXPECT_THROW(Engine({.max_ops_in_flight = 0, .read_environment = false}), std::invalid_argument);
  EXPECT_THROW(Engine({.cpu_threads = -1, .read_environment = false}), std::invalid_argument);
}

// The cores in this thread's affinity mask (0 where it cannot be read).
int cores_in_mask() {
  cpu_set_t mask;
  return sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : 0;
}

TEST(EngineOptions, ZeroThreadsMeansEveryCore) {
  const int cores = cores_in_mask();
  if (cores == 0) GTEST_SKIP() << "no affinity mask to compare with";
  Engine engine({.cpu_threads = 0, .read_environment = false});
  EXPECT_EQ(engine.cpu_threads(), cores);
}

// Every core the process may run on, not every core of the machine: under
// taskset, a container's cpuset or mpirun's binding, a worker per machine
// core would take turns on the cores it has.
TEST(EngineOptions, ZeroThreadsCountsOnlyTheCoresTheProcessMayRunOn) {
  int threads = 0;
  {
    const OnOneCpu confined;
    if (!confined.confined()) GTEST_SKIP() << "one core in the mask already, or no mask to narrow";
    Engine engine({.cpu_threads = 0, .read_environment = false});
    threads = engine.cpu_threads();
    const Var v = engine.new_var();
    int ran = 0;
    engine.push([&](RunContext&) { ++ran; }, {}, {v});
    engine.wait_all();
    EXPECT_EQ(ran, 1);
  }
  EXPECT_EQ(threads, 1);
}

}  // namespace
}  // namespace depengine
