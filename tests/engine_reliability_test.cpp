// Defects found by probing the engine as an adversarial user would: pushes
// racing a deletion, forged and foreign handles, absurd options, failure
// records that pile up or report twice, deep nested pushes, bad devices,
// an engine destroyed from inside its own operation.

#include <gtest/gtest.h>
#include <oneapi/tbb/parallel_for.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <depengine/c_api.h>
#include <depengine/engine.h>

#include "tests/support/message_of.h"
#include "tests/support/pinned_neighbours.h"
#include <depengine/executor.h>

namespace depengine {
namespace {

struct Config {
  EngineKind kind;
  bool batch_pushes;
  bool busy_neighbours = false;  // pinned (engine/held_ops.h)
};

class Reliability : public ::testing::TestWithParam<Config> {
 protected:
  EngineOptions options() const {
    return {.kind = GetParam().kind, .cpu_threads = 2, .read_environment = false,
            .batch_pushes = GetParam().batch_pushes};
  }

 private:
  const PinnedNeighboursIf neighbours_{GetParam().busy_neighbours};
};

INSTANTIATE_TEST_SUITE_P(Engines, Reliability,
                         ::testing::Values(Config{EngineKind::Threaded, true}, Config{EngineKind::Threaded, false},
                                           Config{EngineKind::Threaded, true, true}, Config{EngineKind::Naive, false}),
                         [](const auto& info) {
                           if (info.param.kind == EngineKind::Naive) return std::string("Naive");
                           if (info.param.busy_neighbours) return std::string("BatchedBesideBusyNeighbours");
                           return std::string(info.param.batch_pushes ? "Batched" : "Unbatched");
                         });

// ---------------------------------------------------------------- push against delete_var

// A wait racing delete_var reports the deletion instead of waiting behind it
// on a slot that is recycled meanwhile (pushes racing it:
// Stress.PushRacingWithDeleteIsOrderedBeforeItOrRejected).
TEST_P(Reliability, WaitRacingDeleteReturnsOrThrows) {
  Engine engine(options());
  for (int round = 0; round < 500; ++round) {
    const Var v = engine.new_var("v");
    engine.push([](RunContext&) {}, {}, {v});
    std::atomic<bool> go{false};
    std::thread waiter([&] {
      while (!go.load(std::memory_order_acquire)) {
      }
      try {
        for (;;) engine.wait_to_read(v);
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("deleted"), std::string::npos) << e.what();
      }
    });
    go.store(true, std::memory_order_release);
    engine.delete_var(v);
    waiter.join();
  }
  engine.wait_all();
}

// ---------------------------------------------------------------- handles

TEST_P(Reliability, HandlesOfSlotsNeverHandedOutAreRejected) {
  Engine engine(options());
  const Var real = engine.new_var("real");
  // The same engine and generation as a real handle, on a slot of the same
  // chunk that no new_var returned; and the real slot with other generations.
  for (const Var forged : {Var(real.engine_id(), real.slot() + 1, real.generation()),
                           Var(real.engine_id(), real.slot() + 7, 1), Var(real.engine_id(), real.slot(), 0),
                           Var(real.engine_id(), real.slot(), real.generation() + 1)}) {
    EXPECT_THROW(engine.push([](RunContext&) {}, {forged}, {}), std::invalid_argument);
    EXPECT_THROW(engine.wait_to_read(forged), std::invalid_argument);
    EXPECT_THROW(engine.delete_var(forged), std::invalid_argument);
  }
  // Nothing was freed by the forged deletes: new variables get new slots.
  const Var a = engine.new_var("a"), b = engine.new_var("b");
  EXPECT_NE(a.slot(), b.slot());
  EXPECT_NE(a.slot(), real.slot());
  EXPECT_EQ(engine.var_name(real), "real");
  engine.wait_all();
}

// ---------------------------------------------------------------- options

TEST_P(Reliability, UnlimitedOpsInFlightDoesNotBlock) {
  EngineOptions opts = options();
  for (std::size_t bound : {kUnlimitedOpsInFlight, (std::size_t{1} << 63), (std::size_t{1} << 63) + 5}) {
    opts.max_ops_in_flight = bound;
    Engine engine(opts);
    const Var v = engine.new_var("v");
    int count = 0;
    for (int i = 0; i < 1000; ++i) engine.push([&](RunContext&) { ++count; }, {}, {v});
    engine.wait_all();
    EXPECT_EQ(count, 1000);
  }
}

TEST_P(Reliability, OutOfRangeOptionsAreRejectedAlikeInEveryEntryPoint) {
  EngineOptions opts = options();
  for (int threads : {-1, kMaxCpuThreads + 1, 100000}) {
    opts.cpu_threads = threads;
    EXPECT_NE(message_of([&] { Engine engine(opts); }).find("cpu_threads"), std::string::npos) << threads;
  }
  opts.cpu_threads = 1;
  opts.max_ops_in_flight = 0;
  EXPECT_THROW(Engine engine(opts), std::invalid_argument);

  depengine_engine_options c_options;
  depengine_engine_options_init(&c_options);
  c_options.read_environment = 0;
  depengine_engine* engine = nullptr;
  c_options.cpu_threads = kMaxCpuThreads + 1;
  EXPECT_EQ(depengine_engine_create(&c_options, &engine), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(depengine_last_error()).find("cpu_threads"), std::string::npos);
  c_options.cpu_threads = 1;
  c_options.max_ops_in_flight = SIZE_MAX;
  ASSERT_EQ(depengine_engine_create(&c_options, &engine), DEPENGINE_OK);
  EXPECT_EQ(depengine_wait_all(engine), DEPENGINE_OK);
  EXPECT_EQ(depengine_engine_destroy(engine), DEPENGINE_OK);
}

TEST(ReliabilityOptions, TheEnvironmentIsBoundedLikeTheOptions) {
  ::setenv("DEPENGINE_CPU_THREADS", std::to_string(kMaxCpuThreads + 1).c_str(), 1);
  EXPECT_NE(message_of([] { Engine engine; }).find("DEPENGINE_CPU_THREADS"), std::string::npos);
  ::unsetenv("DEPENGINE_CPU_THREADS");
  for (const char* bad : {"0", "-1", "ten", "12x", "99999999999999999999999"}) {
    ::setenv("DEPENGINE_MAX_OPS_IN_FLIGHT", bad, 1);
    const std::string message = message_of([] { Engine engine; });
    EXPECT_NE(message.find("DEPENGINE_MAX_OPS_IN_FLIGHT"), std::string::npos) << bad;
    EXPECT_NE(message.find("'unlimited'"), std::string::npos) << message;
  }
  ::unsetenv("DEPENGINE_MAX_OPS_IN_FLIGHT");
}

TEST(ReliabilityOptions, TheEnvironmentBoundsTheOpsInFlight) {
  // With a bound of 1, a push waits while more than one op is in flight.
  ::setenv("DEPENGINE_MAX_OPS_IN_FLIGHT", "1", 1);
  {
    Engine engine({.kind = EngineKind::Threaded, .cpu_threads = 2});
    std::atomic<bool> release{false}, third_pushed{false};
    // The later ops wait for the first, so none completes meanwhile.
    const Var v = engine.new_var("v");
    engine.push([&](RunContext&) { while (!release.load()) std::this_thread::yield(); }, {}, {v});
    std::thread pusher([&] {
      engine.push([](RunContext&) {}, {v}, {});
      engine.push([](RunContext&) {}, {v}, {});
      third_pushed = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(third_pushed.load());  // without the bound it returns at once
    release = true;
    pusher.join();
    engine.wait_all();
  }
  ::setenv("DEPENGINE_MAX_OPS_IN_FLIGHT", "unlimited", 1);
  {
    Engine engine({.kind = EngineKind::Threaded, .cpu_threads = 1});
    std::atomic<bool> release{false};
    std::atomic<bool> all_pushed{false};
    engine.push([&](RunContext&) { while (!release.load()) std::this_thread::yield(); }, {}, {});
    std::thread pusher([&] {
      for (int i = 0; i < 100'000; ++i) engine.push([](RunContext&) {}, {}, {});  // past the default bound
      all_pushed = true;
    });
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!all_pushed.load() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(all_pushed.load());  // while the first op still runs
    release = true;
    pusher.join();
    engine.wait_all();
  }
  ::unsetenv("DEPENGINE_MAX_OPS_IN_FLIGHT");
}

// ---------------------------------------------------------------- failures

// Counts its live copies: a failure record that is never freed keeps one.
struct CountedError : std::runtime_error {
  static inline std::atomic<int> live{0};
  CountedError() : std::runtime_error("counted") { live.fetch_add(1); }
  CountedError(const CountedError& other) : std::runtime_error(other) { live.fetch_add(1); }
  ~CountedError() override { live.fetch_sub(1); }
};

// An op that runs a oneTBB algorithm of its own: where that runs on the
// engine's arena, its thread may take the engine's next worker task while it
// waits, nested inside the op (and without a mailbox). Every op still runs
// once, in order per variable.
TEST_P(Reliability, OpsThatRunOneTbbAlgorithmsInsideAreAllRun) {
#if DEPENGINE_TSAN
  GTEST_SKIP() << "Debian's libtbb is not instrumented: ThreadSanitizer reports parallel_for's own hand-offs";
#endif
  Engine engine(options());
  Var parallel = engine.new_var(), counter = engine.new_var();
  std::atomic<long> items{0};
  long count = 0;
  for (int i = 0; i < 40; ++i) {
    engine.push([&](RunContext&) {
      oneapi::tbb::parallel_for(0, 1000, [&](int) { items.fetch_add(1, std::memory_order_relaxed); });
    }, {}, {parallel});
    for (int j = 0; j < 20; ++j) engine.push([&, expected = i * 20 + j](RunContext&) {
      EXPECT_EQ(count, expected);
      ++count;
    }, {}, {counter});
  }
  engine.wait_all();
  EXPECT_EQ(items.load(), 40 * 1000);
  EXPECT_EQ(count, 40 * 20);
}

TEST_P(Reliability, FailuresReportedByWaitsAreFreed) {
  Engine engine(options());
  const Var a = engine.new_var("a");
  const int live_before = CountedError::live.load();
  for (int round = 0; round < 5000; ++round) {
    engine.push([](RunContext&) { throw CountedError(); }, {}, {a});
    engine.push([](RunContext&) {}, {a}, {});
    EXPECT_THROW(engine.wait_to_read(a), CountedError);
  }
  // Every failure was reported, so none is kept (a few may still be on
  // their way out of a worker).
  engine.wait_all();
  EXPECT_LE(CountedError::live.load() - live_before, 2);
}

TEST_P(Reliability, AFailureIsReportedOncePerVariableItMarks) {
  Engine engine(options());
  const Var a = engine.new_var("a"), b = engine.new_var("b");
  // A skipped reader that writes nothing marks nothing: reported once, by a.
  engine.push([](RunContext&) { throw std::runtime_error("W"); }, {}, {a});
  engine.push([](RunContext&) {}, {a}, {});
  EXPECT_EQ(message_of([&] { engine.wait_to_read(a); }), "W");
  EXPECT_NO_THROW(engine.wait_all());
  // A skipped writer marks b: a wait on a reports it for a, wait_all for b.
  engine.push([](RunContext&) { throw std::runtime_error("V"); }, {}, {a});
  engine.push([](RunContext&) {}, {a}, {b});
  EXPECT_EQ(message_of([&] { engine.wait_to_read(a); }), "V");
  EXPECT_EQ(message_of([&] { engine.wait_all(); }), "V");
  EXPECT_NO_THROW(engine.wait_to_read(b));
  EXPECT_NO_THROW(engine.wait_all());
}

TEST_P(Reliability, UnreportedFailureOfADeletedVariableIsReportedOnce) {
  Engine engine(options());
  const Var a = engine.new_var("a"), b = engine.new_var("b");
  engine.push([](RunContext&) { throw std::runtime_error("W"); }, {}, {a, b});
  engine.delete_var(a);
  EXPECT_EQ(message_of([&] { engine.wait_all(); }), "W");
  EXPECT_NO_THROW(engine.wait_all());
  EXPECT_NO_THROW(engine.wait_to_read(b));
}

TEST_P(Reliability, AnAsyncOpThatThrowsAfterCompletingIsReported) {
  Engine engine(options());
  const Var a = engine.new_var("a");
  engine.push_async(
      [](RunContext&, Completion done) {
        done();
        throw std::runtime_error("after completion");
      },
      {}, {a});
  // The op completes once its function returned, failed by what it threw.
  EXPECT_EQ(message_of([&] { engine.wait_to_read(a); }), "after completion");
  EXPECT_NO_THROW(engine.wait_all());
}

// Pooled blocks pass from every kind of op to every other; a block's reset
// clears only what its last use set. Ops of every kind in a random order,
// each checked for what the previous users of its block might leave: a
// name, an error, an async function, a deletion, a wait.
TEST_P(Reliability, OpsOnReusedBlocksCarryNothingOverFromEarlierOps) {
  Engine engine(options());
  std::mt19937 random(2026);
  const Var plain = engine.new_var("plain"), log = engine.new_var("log"), failing = engine.new_var("failing");
  std::vector<std::string> seen_names, expected_names;
  int async_ran = 0;
  for (int round = 0; round < 2000; ++round) {
    switch (random() % 6) {
      case 0: {  // a plain op, named or not
        const bool named = random() % 2 == 0;
        engine.push([&](RunContext& ctx) { seen_names.emplace_back(ctx.name); }, {}, {plain},
                    {.name = named ? "plain op" : ""});
        expected_names.emplace_back(named ? "plain op" : "");
        break;
      }
      case 1:  // a failure, reported at once
        engine.push([](RunContext&) { throw std::runtime_error("F"); }, {}, {failing}, {.name = "failing op"});
        EXPECT_EQ(message_of([&] { engine.wait_to_read(failing); }), "F");
        break;
      case 2:  // an async op that completes inside its function
        engine.push_async(
            [&](RunContext&, Completion done) {
              ++async_ran;
              done();
            },
            {}, {plain});
        break;
      case 3: {  // a deletion
        const Var temporary = engine.new_var("temporary");
        engine.push([](RunContext&) {}, {}, {temporary}, {.name = "temporary op"});
        engine.delete_var(temporary);
        break;
      }
      case 4:  // a wait marker
        EXPECT_NO_THROW(engine.wait_to_read(plain));
        break;
      default:  // an unnamed reader, skipped only if an error leaked to it (`log` orders the readers)
        engine.push([&](RunContext& ctx) { seen_names.emplace_back(ctx.name); }, {plain}, {log});
        expected_names.emplace_back("");
        break;
    }
  }
  EXPECT_NO_THROW(engine.wait_all());
  EXPECT_EQ(seen_names, expected_names);
  EXPECT_GT(async_ran, 0);
}

// ---------------------------------------------------------------- nested pushes

TEST_P(Reliability, AChainPushedFromInsideRunsWithoutNesting) {
  Engine engine(options());
  const Var v = engine.new_var("v");
  constexpr int kLength = 200000;  // far deeper than a thread's stack holds frames
  std::vector<int> order;
  order.reserve(kLength);
  std::function<void(RunContext&)> step = [&](RunContext&) {
    order.push_back(static_cast<int>(order.size()));
    if (static_cast<int>(order.size()) < kLength) engine.push(step, {}, {v});
  };
  engine.push(step, {}, {v});
  engine.wait_all();
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kLength));
  EXPECT_EQ(order.back(), kLength - 1);
}

TEST(ReliabilityNaive, PushesFromInsideRunAfterTheOpInPushOrder) {
  Engine engine({.kind = EngineKind::Naive, .read_environment = false});
  const Var v = engine.new_var("v");
  std::vector<int> order;
  engine.push(
      [&](RunContext&) {
        engine.push([&](RunContext&) { order.push_back(2); }, {}, {v});
        engine.push([&](RunContext&) { order.push_back(3); }, {}, {v});
        order.push_back(1);
      },
      {}, {});
  // A deletion pushed from inside waits for the op that pushed it.
  bool released = false, used_after_release = false;
  const Var w = engine.new_var("w");
  engine.push(
      [&](RunContext&) {
        engine.delete_var(w, [&] { released = true; });
        used_after_release = released;
      },
      {}, {w});
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(released);
  EXPECT_FALSE(used_after_release);
}

// ---------------------------------------------------------------- devices

TEST_P(Reliability, PushesToDevicesOutsideTheEnumOrIndexAreRejected) {
  Engine engine(options());
  const Var v = engine.new_var("v");
  const Device wild{static_cast<DeviceKind>(77), 0};
  EXPECT_NE(message_of([&] { engine.push([](RunContext&) {}, {}, {v}, {.device = wild}); }).find("unknown kind 77"),
            std::string::npos);
  EXPECT_FALSE(engine.has_device(wild));
  struct Inline final : Executor {
    void submit(ReadyOp op) override {
      RunContext ctx{.device = op.device()};
      op.run_and_complete(ctx);
    }
  };
  EXPECT_THROW(engine.add_device(wild, std::make_unique<Inline>()), std::invalid_argument);
  EXPECT_NE(message_of([&] {
              engine.push([](RunContext&) {}, {}, {v}, {.device = Device{DeviceKind::cpu, 5}});
            }).find("cpu:5"),
            std::string::npos);
  engine.wait_all();
}

// ---------------------------------------------------------------- stalls

TEST_P(Reliability, AStallWarningNamesTheOperationsInFlightTooLong) {
  ::setenv("DEPENGINE_STALL_WARNING_MS", "20", 1);
  EngineOptions opts = options();
  opts.read_environment = true;
  ::testing::internal::CaptureStderr();
  {
    Engine engine(opts);
    const Var v = engine.new_var("v");
    std::thread completer;
    engine.push_async(
        [&](RunContext&, Completion done) {
          // 25 thresholds late: the watch, which looks every 10 ms, reports it.
          completer = std::thread([done = std::move(done)]() mutable {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            done();
          });
        },
        {}, {v}, {.name = "late_completion"});
    engine.wait_all();
    completer.join();
  }
  const std::string out = ::testing::internal::GetCapturedStderr();
  ::unsetenv("DEPENGINE_STALL_WARNING_MS");
  EXPECT_NE(out.find("operation 'late_completion' on cpu in flight for"), std::string::npos) << out;
  // Reported once.
  EXPECT_EQ(out.find("late_completion", out.find("late_completion") + 1), std::string::npos) << out;
}

TEST(ReliabilityOptions, ABadStallWarningIsRejected) {
  for (const char* bad : {"0", "-5", "soon", "100000000000"}) {
    ::setenv("DEPENGINE_STALL_WARNING_MS", bad, 1);
    EXPECT_NE(message_of([] { Engine engine; }).find("DEPENGINE_STALL_WARNING_MS"), std::string::npos) << bad;
  }
  ::unsetenv("DEPENGINE_STALL_WARNING_MS");
}

// ---------------------------------------------------------------- destruction

TEST_P(Reliability, DestroyingAnEngineFromInsideItsOperationEndsTheProgramWithTheCause) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const EngineOptions opts = options();
  EXPECT_DEATH(
      {
        auto* engine = new Engine(opts);
        engine->push([engine](RunContext&) { delete engine; }, {}, {});
        engine->wait_all();
      },
      "destroyed from inside an operation");
}

}  // namespace
}  // namespace depengine
