// Stress: many operations through the back-pressure bound, destruction with
// work in flight.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <depengine/engine.h>
#include <oneapi/tbb/global_control.h>

#include <sys/wait.h>
#include <unistd.h>

namespace depengine {
namespace {

// A million ops through a bound of 1024: the frontend is held back so that
// never much more than the bound is pending (memory stays bounded).
TEST(Stress, MillionOpsStayWithinTheBackPressureBound) {
  constexpr std::size_t kBound = 1024;
  constexpr int kOps = 1'000'000;
  Engine engine({.cpu_threads = 2, .max_ops_in_flight = kBound, .read_environment = false});
  std::vector<Var> vars;
  for (int i = 0; i < 64; ++i) vars.push_back(engine.new_var());
  std::atomic<long> executed{0};
  long max_pending = 0;
  for (int i = 0; i < kOps; ++i) {
    engine.push([&](RunContext&) { executed.fetch_add(1, std::memory_order_relaxed); }, {}, {vars[i % 64]});
    if (i % 1024 == 0) max_pending = std::max(max_pending, i + 1 - executed.load(std::memory_order_relaxed));
  }
  engine.wait_all();
  EXPECT_EQ(executed.load(), kOps);
  // The bound is checked every bound/8 pushes (at most 64), so it can be
  // overshot by that much.
  EXPECT_LE(max_pending, static_cast<long>(kBound + 64));
}

TEST(Stress, BackPressureFromSeveralThreads) {
  Engine engine({.cpu_threads = 2, .max_ops_in_flight = 16, .read_environment = false});
  Var shared = engine.new_var();
  long count = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) engine.push([&](RunContext&) { ++count; }, {}, {shared});
    });
  }
  for (auto& th : threads) th.join();
  engine.wait_to_read(shared);
  EXPECT_EQ(count, 80000);
}

TEST(Stress, DestructionWithWorkInFlightRunsEverything) {
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ran{0};
    {
      Engine engine({.cpu_threads = 2, .read_environment = false});
      std::vector<Var> vars;
      for (int i = 0; i < 8; ++i) vars.push_back(engine.new_var());
      for (int i = 0; i < 2000; ++i) {
        engine.push([&](RunContext&) { ran.fetch_add(1, std::memory_order_relaxed); }, {vars[(i + 3) % 8]},
                    {vars[i % 8]});
      }
      for (Var v : vars) engine.delete_var(v);
    }
    ASSERT_EQ(ran.load(), 2000);
  }
}

// Thread-local objects die in reverse order of construction: one made before
// the thread first pushed is destroyed after the engine's per-thread state
// of that thread (its cache of op blocks), and may still push then.
TEST(Stress, PushFromAThreadLocalDestructorAtThreadExit) {
  for (EngineKind kind : {EngineKind::Naive, EngineKind::Threaded}) {
    Engine engine({.kind = kind, .cpu_threads = 1, .read_environment = false});
    Var v = engine.new_var();
    std::atomic<int> ran{0};
    struct PushAtExit {
      Engine* engine = nullptr;
      Var var;
      std::atomic<int>* ran = nullptr;
      ~PushAtExit() {
        if (engine) engine->push([r = ran](RunContext&) { r->fetch_add(1); }, {}, {var});
      }
    };
    std::thread frontend([&] {
      thread_local PushAtExit at_exit;
      at_exit.var = v;
      at_exit.ran = &ran;
      at_exit.engine = &engine;
      for (int i = 0; i < 200; ++i) engine.push([&](RunContext&) { ran.fetch_add(1); }, {}, {v});
    });
    frontend.join();
    engine.wait_all();
    EXPECT_EQ(ran.load(), 201) << (kind == EngineKind::Naive ? "naive" : "threaded");
  }
}

TEST(Stress, IdleEngineGoesQuiet) {
  // Workers give their threads back after a short spin; afterwards new work
  // must still be picked up (nothing depends on a spinning worker).
  Engine engine({.cpu_threads = 2, .read_environment = false});
  Var v = engine.new_var();
  int value = 0;
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    engine.push([&](RunContext&) { ++value; }, {}, {v});
    engine.wait_to_read(v);
  }
  EXPECT_EQ(value, 5);
}

// A submit racing with the last worker going to sleep (after 50 us without
// work) must still get its op run: either the submit sees no worker and
// starts one, or the retiring worker sees the op. The frontend only polls a
// flag the op sets, so no blocking call (which may run queued ops itself)
// can hide a stranded op; each gap straddles the retirement time.
TEST(Stress, PushRacingWithTheLastWorkerRetiringIsNeverStranded) {
  for (int threads : {1, 2}) {
    Engine engine({.cpu_threads = threads, .read_environment = false});
    std::vector<Var> vars;
    for (int i = 0; i < 4; ++i) vars.push_back(engine.new_var());
    std::atomic<int> ran{0};
    constexpr int kRounds = 400;
    for (int round = 0; round < kRounds; ++round) {
      const auto gap = std::chrono::microseconds(20 + (round * 37) % 100);
      const auto until = std::chrono::steady_clock::now() + gap;
      while (std::chrono::steady_clock::now() < until) {
      }
      engine.push([&](RunContext&) { ran.fetch_add(1, std::memory_order_release); }, {}, {vars[round % 4]});
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (ran.load(std::memory_order_acquire) != round + 1 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
      ASSERT_EQ(ran.load(), round + 1) << "op of round " << round << " never ran (" << threads << " threads)";
    }
    engine.wait_all();
  }
}

// The wake-up handshake registers the process for membarrier once, and a
// child of fork() inherits both the registration and the record of it. An
// engine made in the child must run its ops (its workers fall asleep between
// the pushes, so the retiring path with its heavy fence is taken). oneTBB's
// threads do not survive a fork: the parent shuts its scheduler down first,
// as a program that forks after using oneTBB must.
TEST(Stress, EngineInAForkedChildRunsItsOps) {
#if DEPENGINE_TSAN
  GTEST_SKIP() << "ThreadSanitizer does not support threads started after a multi-threaded fork";
#else
  oneapi::tbb::task_scheduler_handle scheduler{oneapi::tbb::attach{}};
  {
    Engine parent({.cpu_threads = 2, .read_environment = false});
    Var v = parent.new_var();
    parent.push([](RunContext&) {}, {}, {v});
    parent.wait_all();
  }
  if (!oneapi::tbb::finalize(scheduler, std::nothrow)) GTEST_SKIP() << "oneTBB's scheduler could not be shut down";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int value = 0;
    {
      Engine engine({.cpu_threads = 2, .read_environment = false});
      Var v = engine.new_var();
      for (int i = 0; i < 5; ++i) {
        engine.push([&](RunContext&) { ++value; }, {}, {v});
        engine.wait_to_read(v);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    _exit(value == 5 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit normally (status " << status << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
#endif
}

}  // namespace
}  // namespace depengine
