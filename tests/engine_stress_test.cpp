// Stress: many operations through the back-pressure bound, destruction with
// work in flight, pushes racing with the deletion of their variable, handles
// across many engines, and a long error loop that only wait_to_read reports.

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <depengine/c_api.h>
#include <depengine/engine.h>
#include <oneapi/tbb/global_control.h>

#include "sync/engine_thread_clock.h"
#include "tests/support/pinned_neighbours.h"
#include "tests/support/thread_cpu_spin.h"

#include <sys/wait.h>
#include <unistd.h>

namespace depengine {
namespace {

// A sanitizer slows every operation down by ten or more: the long loops run shorter under one.
#if defined(__SANITIZE_ADDRESS__) || DEPENGINE_TSAN
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

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

// An idle engine uses no CPU: once its work is done and its workers have
// retired (or, beside busy neighbours, parked), nothing of it spins or ticks
// (getrusage over an idle second).
void expect_no_cpu_once_idle() {
  Engine engine({.cpu_threads = 2, .read_environment = false});
  Var v = engine.new_var();
  for (int i = 0; i < 10000; ++i) engine.push([](RunContext&) {}, {}, {v});
  engine.wait_all();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // workers retire, the flush timer disarms
  auto cpu_seconds = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
  };
  const double before = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double used = cpu_seconds() - before;
  EXPECT_LT(used, 0.05) << "an idle engine used " << used << " s of CPU in one second";
  engine.push([](RunContext&) {}, {}, {v});  // and it still runs new work
  engine.wait_all();
}

TEST(Stress, AnIdleEngineUsesNoCpu) { expect_no_cpu_once_idle(); }

TEST(Stress, AnIdleEngineUsesNoCpuBesideBusyNeighbours) {
  const PinnedNeighbours busy(true);
  expect_no_cpu_once_idle();
}

#if defined(__linux__)
// The thread that pushes to a naive engine runs its ops: its CPU time is the
// engine's, not a neighbour's (sync/machine_load.h), as a threaded engine's
// frontend and workers are. A fresh thread, enlisted by nothing else.
TEST(Stress, ANaiveEnginesPushingThreadCountsAsTheEngines) {
  double counted = 0;
  std::thread pusher([&] {
    Engine engine({.kind = EngineKind::Naive, .read_environment = false});
    const Var v = engine.new_var();
    const double before = detail::EngineThreadClock::seconds().value();
    engine.push([](RunContext&) { spin_for_thread_cpu(std::chrono::milliseconds(200)); }, {}, {v});
    counted = detail::EngineThreadClock::seconds().value() - before;
  });
  pusher.join();
  EXPECT_GE(counted, 0.15);
}
#endif

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

// A push racing with delete_var on the same variable is either ordered
// before the deletion (it runs, before the release callback) or rejected
// with std::invalid_argument; no accepted operation may run after the
// release, which would be a use after free of what the variable stands for.
TEST(Stress, PushRacingWithDeleteIsOrderedBeforeItOrRejected) {
  constexpr int kRounds = kSanitized ? 400 : 2000;
  for (EngineKind kind : {EngineKind::Threaded, EngineKind::Naive}) {
    for (bool batch : {true, false}) {
      if (kind == EngineKind::Naive && !batch) continue;  // the naive engine does not batch
      Engine engine({.kind = kind, .cpu_threads = 1, .read_environment = false, .batch_pushes = batch});
      std::mt19937 rng(7);
      int late = 0, accepted = 0, rejected = 0;
      for (int round = 0; round < kRounds; ++round) {
        const Var v = engine.new_var("raced");
        const bool as_write = round % 2 == 1;
        std::atomic<bool> released{false}, started{false};
        std::atomic<int> ran_after_release{0}, ran{0};
        int pushed = 0;
        bool was_rejected = false;
        std::thread pusher([&] {
          started.store(true);
          // Until the deletion rejects a push: every round races it.
          for (;;) {
            try {
              auto op = [&](RunContext&) {
                if (released.load()) ran_after_release.fetch_add(1);
                ran.fetch_add(1);
              };
              as_write ? engine.push(op, {}, {v}) : engine.push(op, {v}, {});
              ++pushed;
            } catch (const std::invalid_argument&) {
              was_rejected = true;  // the deletion came first: every later push is rejected too
              return;
            }
          }
        });
        while (!started.load()) {
        }
        // A head start of a few pushes, varied, so that the delete lands
        // anywhere among them (a busy wait: yielding would hand the core to
        // the workers for a whole time slice).
        for (int spin = std::uniform_int_distribution<int>(0, 4000)(rng); spin > 0; --spin) {
          (void)released.load(std::memory_order_relaxed);
        }
        engine.delete_var(v, [&] { released.store(true); });
        pusher.join();
        engine.wait_all();
        ASSERT_TRUE(released.load());
        late += ran_after_release.load();
        accepted += pushed;
        rejected += was_rejected;
        EXPECT_EQ(ran.load(), pushed) << "round " << round << ": every accepted push runs, once";
      }
      EXPECT_EQ(late, 0) << (kind == EngineKind::Naive ? "naive" : batch ? "threaded, batched" : "threaded, unbatched")
                         << ": accepted ops ran after the release callback (" << accepted << " accepted in all)";
      EXPECT_EQ(rejected, kRounds);
    }
  }
}

// Every engine rejects the variables of every other one, however many
// engines a process made (engine ids beyond any small tag), in C++ and in C.
TEST(Stress, VariablesOfAnyOtherOfManyEnginesAreRejected) {
  constexpr int kEngines = 136;  // more than 128: ids that agree in their low 7 bits
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<Var> vars;
  for (int i = 0; i < kEngines; ++i) {
    // Mostly naive engines: no threads; every eighth threaded with one worker.
    const EngineKind kind = i % 8 == 0 ? EngineKind::Threaded : EngineKind::Naive;
    engines.push_back(std::make_unique<Engine>(EngineOptions{.kind = kind, .cpu_threads = 1, .read_environment = false}));
    vars.push_back(engines.back()->new_var("v" + std::to_string(i)));
  }
  int accepted = 0;
  for (int i = 0; i < kEngines; ++i) {
    for (int j = 0; j < kEngines; ++j) {
      if (i == j) continue;
      Engine& other = *engines[j];
      auto rejected = [&](auto&& call) {
        try {
          call();
        } catch (const std::invalid_argument&) {
          return true;
        }
        return false;
      };
      accepted += !rejected([&] { other.push([](RunContext&) {}, {vars[i]}, {}); });
      accepted += !rejected([&] { other.push([](RunContext&) {}, {}, {vars[i]}); });
      accepted += !rejected([&] { other.wait_to_read(vars[i]); });
      accepted += !rejected([&] { other.wait_to_write(vars[i]); });
      accepted += !rejected([&] { other.delete_var(vars[i]); });
    }
  }
  EXPECT_EQ(accepted, 0) << "calls with another engine's variable were accepted";
  // Each variable is still its own engine's, exactly once.
  for (int i = 0; i < kEngines; ++i) {
    int value = 0;
    engines[i]->push([&](RunContext&) { value = i; }, {}, {vars[i]});
    engines[i]->wait_to_read(vars[i]);
    EXPECT_EQ(value, i);
    engines[i]->delete_var(vars[i]);
    EXPECT_THROW(engines[i]->delete_var(vars[i]), std::invalid_argument);
  }
}

TEST(Stress, CHandlesOfAnyOtherOfManyEnginesAreUnknown) {
  constexpr int kEngines = 136;
  std::vector<depengine_engine*> engines(kEngines, nullptr);
  std::vector<depengine_var> vars(kEngines, DEPENGINE_NULL_VAR);
  for (int i = 0; i < kEngines; ++i) {
    depengine_engine_options options;
    depengine_engine_options_init(&options);
    options.kind = i % 8 == 0 ? DEPENGINE_ENGINE_THREADED : DEPENGINE_ENGINE_NAIVE;
    options.cpu_threads = 1;
    options.read_environment = 0;
    ASSERT_EQ(depengine_engine_create(&options, &engines[i]), DEPENGINE_OK) << depengine_last_error();
    ASSERT_EQ(depengine_new_var(engines[i], nullptr, &vars[i]), DEPENGINE_OK);
  }
  auto nothing = [](void*, depengine_op_context*) {};
  int accepted = 0;
  std::string example;
  for (int i = 0; i < kEngines; ++i) {
    for (int j = 0; j < kEngines; ++j) {
      if (i == j) continue;
      const depengine_status statuses[] = {
          depengine_push(engines[j], nothing, nullptr, &vars[i], 1, nullptr, 0, nullptr),
          depengine_push(engines[j], nothing, nullptr, nullptr, 0, &vars[i], 1, nullptr),
          depengine_wait_to_read(engines[j], vars[i]),
          depengine_wait_to_write(engines[j], vars[i]),
          depengine_delete_var(engines[j], vars[i], nullptr, nullptr),
      };
      for (depengine_status s : statuses) {
        if (s == DEPENGINE_ERROR_UNKNOWN_VAR) continue;
        ++accepted;
        if (example.empty()) {
          example = "engine " + std::to_string(j) + " took engine " + std::to_string(i) + "'s handle: " +
                    depengine_status_name(s);
        }
      }
    }
  }
  EXPECT_EQ(accepted, 0) << example;
  for (int i = 0; i < kEngines; ++i) {
    EXPECT_EQ(depengine_delete_var(engines[i], vars[i], nullptr, nullptr), DEPENGINE_OK) << "engine " << i;
    EXPECT_EQ(depengine_wait_all(engines[i]), DEPENGINE_OK);
    EXPECT_EQ(depengine_engine_destroy(engines[i]), DEPENGINE_OK);
  }
}

// Resident memory of this process, from /proc/self/statm.
double resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long size = 0, resident = 0;
  const int read = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return read == 2 ? static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) : 0;
}

// A loop that fails, propagates the failure to a reader, and catches it with
// wait_to_read only (never wait_all): the failure is reported once, by that
// wait, and what the engine kept of it is freed, so memory stays flat; a
// wait_all afterwards has nothing left to report.
TEST(Stress, ErrorLoopReportedByWaitToReadOnlyStaysFlat) {
  // Under a sanitizer, fewer rounds: only the reporting is checked there
  // (freed memory waits in its quarantine: resident size says nothing).
  constexpr int kWarmUp = 2000, kRounds = kSanitized ? 10'000 : 100'000;
  for (EngineKind kind : {EngineKind::Threaded, EngineKind::Naive}) {
    SCOPED_TRACE(kind == EngineKind::Naive ? "naive" : "threaded");
    Engine engine({.kind = kind, .cpu_threads = 2, .read_environment = false});
    Var a = engine.new_var("a");
    int reports = 0;
    double before = 0;
    for (int round = 0; round < kWarmUp + kRounds; ++round) {
      if (round == kWarmUp) before = resident_bytes();
      engine.push([](RunContext&) { throw std::runtime_error("W"); }, {}, {a});
      engine.push([](RunContext&) { ADD_FAILURE() << "a reader of a failed variable ran"; }, {a}, {});
      try {
        engine.wait_to_read(a);
      } catch (const std::runtime_error& e) {
        reports += std::string(e.what()) == "W";
      }
    }
    const double growth = resident_bytes() - before;
    EXPECT_EQ(reports, kWarmUp + kRounds);
    EXPECT_NO_THROW(engine.wait_all()) << "every failure was reported by wait_to_read already";
    if (!kSanitized) {
      EXPECT_LT(growth, 20e6) << "resident memory grew by " << growth / 1e6 << " MB over " << kRounds << " rounds";
    }
  }
}

}  // namespace
}  // namespace depengine
