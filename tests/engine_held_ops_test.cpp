// Beside busy neighbours (sync/machine_load.h, pinned here), what a
// frontend's pushes make ready waits for that frontend to block instead of
// waking a worker: wait_all runs it on the calling thread. The guarantees
// that must hold meanwhile: a held op runs without any blocking call,
// wait_to_read runs no unrelated op on its caller, back-pressure does not
// wait for a worker nobody started, and a frontend past a burst of held
// ops hands them over without waiting for one that waits for it.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

#include <depengine/engine.h>

#include "devices/cpu/cpu_executor.h"
#include "engine/held_ops.h"
#include "sync/spin_wait.h"
#include "sync/tuning.h"
#include "tests/support/held_worker.h"
#include "tests/support/pinned_neighbours.h"

namespace depengine {
namespace {

using detail::HeldOps;
using detail::HeldOpsSample;
using detail::SpinClock;
using std::chrono::microseconds;

// ---------------------------------------------------------------- the timer's decision, on made-up samples

// A tick 500 µs after `previous`, ops held since `held_for` before it, with
// `pushes` and `completions` since the previous tick.
HeldOpsSample tick_after(const HeldOpsSample& previous, SpinClock::duration held_for, std::uint64_t pushes,
                         std::uint64_t completions) {
  HeldOpsSample now = previous;
  now.when = previous.when + microseconds(500);
  now.held = true;
  now.held_since = now.when - held_for;
  now.pushed += pushes;
  now.completed += completions;
  now.in_flight = static_cast<std::int64_t>(now.pushed - now.completed);
  return now;
}

HeldOpsSample first_tick() {
  return {.when = SpinClock::time_point(std::chrono::seconds(100)), .held = true,
          .held_since = SpinClock::time_point(std::chrono::seconds(100)), .pushed = 1000, .completed = 900,
          .in_flight = 100, .neighbours_busy = true};
}

TEST(HeldOpsPolicy, OpsWaitForAFrontendThatStreamsPushes) {
  const HeldOpsSample previous = first_tick();
  // 1,000 pushes in 500 µs: streaming, however long the ops were held.
  EXPECT_FALSE(HeldOps::need_worker(previous, tick_after(previous, HeldOps::kMaxWait * 3, 1000, 0)));
  // A slow frontend: held for a while, then a worker.
  EXPECT_FALSE(HeldOps::need_worker(previous, tick_after(previous, HeldOps::kMaxWait / 2, 10, 10)));
  EXPECT_TRUE(HeldOps::need_worker(previous, tick_after(previous, HeldOps::kMaxWait, 10, 10)));
}

TEST(HeldOpsPolicy, OpsGetAWorkerWhenNothingMoves) {
  const HeldOpsSample previous = first_tick();
  EXPECT_TRUE(HeldOps::need_worker(previous, tick_after(previous, microseconds(600), 0, 0)));
  // Something completed: a thread runs ops.
  EXPECT_FALSE(HeldOps::need_worker(previous, tick_after(previous, microseconds(600), 0, 5)));
  // Nothing was held at the previous tick: these ops are new.
  HeldOpsSample none = previous;
  none.held = false;
  EXPECT_FALSE(HeldOps::need_worker(none, tick_after(previous, microseconds(100), 0, 0)));
}

TEST(HeldOpsPolicy, OpsGetAWorkerOnceTooManyAreInFlightOrTheNeighboursLeft) {
  const HeldOpsSample previous = first_tick();
  HeldOpsSample now = tick_after(previous, microseconds(600), 1000, 0);
  EXPECT_FALSE(HeldOps::need_worker(previous, now));
  now.in_flight = HeldOps::kMaxInFlight;
  EXPECT_TRUE(HeldOps::need_worker(previous, now));
  now = tick_after(previous, microseconds(600), 1000, 0);
  now.neighbours_busy = false;
  EXPECT_TRUE(HeldOps::need_worker(previous, now));
  now.held = false;
  EXPECT_FALSE(HeldOps::need_worker(previous, now));
}

// ---------------------------------------------------------------- the burst wait's verdict on a stall

TEST(HeldOpsPolicy, AStallIsALongOpWhenTheWorkersRanForAQuarterOfItOrSleep) {
  const double share = detail::tuning::kHeldBurstBusyShare;
  const auto awake = [] { return false; };
  const auto asleep = [] { return true; };
  // A worker spinning in its op for the whole 300 µs wait, or for a quarter.
  EXPECT_TRUE(HeldOps::stalled_in_long_op(300e-6, 300e-6, awake));
  EXPECT_TRUE(HeldOps::stalled_in_long_op(share * 300e-6, 300e-6, awake));
  // Off its core (a neighbour's time slice), it ran for little or none of
  // it, and it is runnable.
  EXPECT_FALSE(HeldOps::stalled_in_long_op(0.9 * share * 300e-6, 300e-6, awake));
  EXPECT_FALSE(HeldOps::stalled_in_long_op(0, 300e-6, awake));
  // Asleep in an op that waits for something else: no CPU time either.
  EXPECT_TRUE(HeldOps::stalled_in_long_op(0, 300e-6, asleep));
  EXPECT_FALSE(HeldOps::stalled_in_long_op(0, 0, asleep));
  // Their states are read only when their CPU time does not tell.
  int asked = 0;
  const auto counting = [&] {
    ++asked;
    return false;
  };
  EXPECT_TRUE(HeldOps::stalled_in_long_op(300e-6, 300e-6, counting));
  EXPECT_EQ(asked, 0);
  EXPECT_FALSE(HeldOps::stalled_in_long_op(0, 300e-6, counting));
  EXPECT_EQ(asked, 1);
}

TEST(HeldOpsPolicy, AFrontendWaitsForItsBurstUnlessANeighbourSharesItsCpu) {
  // A free core for the worker and the frontend to take turns on, or the
  // worker on the frontend's CPU: the frontend yields it to the worker.
  EXPECT_TRUE(HeldOps::waits_for_burst(/*neighbours_on_every_core=*/false, /*worker_on_this_cpu=*/false));
  EXPECT_TRUE(HeldOps::waits_for_burst(false, true));
  EXPECT_TRUE(HeldOps::waits_for_burst(true, true));
  // A neighbour on every core and the worker elsewhere: a neighbour would
  // take the yielded turn, and the frontend pushes on.
  EXPECT_FALSE(HeldOps::waits_for_burst(true, false));
}

// ---------------------------------------------------------------- the engine, beside pinned neighbours

int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

EngineOptions threaded(int workers, std::size_t max_ops_in_flight = 1u << 16) {
  return {.kind = EngineKind::Threaded, .cpu_threads = workers, .max_ops_in_flight = max_ops_in_flight,
          .read_environment = false};
}

// With a worker on every core, a quiet engine's wait_all leaves every op to
// the workers; beside busy neighbours it runs the ops its thread pushed.
// The flush timer may hand an attempt's ops to a worker when the thread is
// descheduled between its pushes and the wait, so most attempts, not all,
// must run on the calling thread.
TEST(HeldOps, BesideBusyNeighboursWaitAllRunsWhatItsThreadPushed) {
  const PinnedNeighbours busy(true);
  Engine engine(threaded(cores()));
  std::vector<Var> vars;
  for (int i = 0; i < 4; ++i) vars.push_back(engine.new_var());
  const std::thread::id caller = std::this_thread::get_id();
  constexpr int kAttempts = 20, kOps = 8;
  int all_here = 0;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::atomic<int> here{0}, ran{0};
    for (int i = 0; i < kOps; ++i) {
      engine.push([&](RunContext&) {
        if (std::this_thread::get_id() == caller) ++here;
        ++ran;
      }, {vars[(i + 1) % vars.size()]}, {vars[i % vars.size()]});
    }
    engine.wait_all();
    ASSERT_EQ(ran.load(), kOps);
    if (here.load() == kOps) ++all_here;
  }
  EXPECT_GE(all_here, kAttempts / 2);
}

// A frontend that never blocks still gets its ops run: the flush timer
// starts a worker for ops held a tick without progress. Exactly two full
// batches, which the frontend registers itself: nothing waits in its buffer
// for the timer's flush, which would wake a worker anyway.
TEST(HeldOps, AHeldOpRunsWithoutABlockingCall) {
  const PinnedNeighbours busy(true);
  constexpr int kOps = 2 * static_cast<int>(detail::tuning::kBatchMaxOps);
  for (const int workers : {1, 2}) {
    Engine engine(threaded(workers));
    const Var a = engine.new_var(), b = engine.new_var();
    std::atomic<int> ran{0};
    for (int i = 0; i < kOps; ++i) engine.push([&](RunContext&) { ++ran; }, {}, {i % 2 ? a : b});
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ran.load() < kOps && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    EXPECT_EQ(ran.load(), kOps) << workers << " workers";
    engine.wait_all();
  }
}

// wait_to_read starts a worker for what its thread held: it runs no op on
// its caller, not even one unrelated to the variable it waits for (such an
// op may wait for what the caller does after the wait).
TEST(HeldOps, WaitToReadRunsNoOpOnItsCaller) {
  const PinnedNeighbours busy(true);
  Engine engine(threaded(cores()));
  const Var unrelated = engine.new_var(), v = engine.new_var();
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> waited{false}, ran_in_wait{false};
  int value = 0;
  for (int round = 0; round < 50; ++round) {
    waited = false;
    engine.push([&](RunContext&) {
      if (std::this_thread::get_id() == caller && !waited.load()) ran_in_wait = true;
    }, {}, {unrelated});
    engine.push([&, round](RunContext&) {
      if (std::this_thread::get_id() == caller && !waited.load()) ran_in_wait = true;
      value = round;
    }, {}, {v});
    engine.wait_to_read(v);
    waited = true;
    ASSERT_EQ(value, round);
  }
  engine.wait_all();
  EXPECT_FALSE(ran_in_wait.load());
}

// Priorities (docs/semantics.md) hold for held ops too: they are ready ops
// of priority 0. The only worker is kept busy first (before the pin, so
// that a worker takes it), then ops of priorities 0, 5, -3 and 9 become
// ready while it runs: the one of priority 0 is held, the others queued.
class PrioritiesBesideBusyNeighbours {
 public:
  Engine& engine() { return engine_; }
  void open() { held_.release(); }
  // Pushes an op that logs `priority` (and opens the gate with `opens`).
  void push(int priority, bool opens = false) {
    engine_.push([this, priority, opens](RunContext&) {
      if (opens) open();
      const std::lock_guard lock(m_);
      order_.push_back(priority);
    }, {}, {engine_.new_var()}, {.priority = priority});
  }
  std::vector<int> order() {
    const std::lock_guard lock(m_);
    return order_;
  }

 private:
  // Unbatched: each op is ready, held or queued, when its push returns.
  Engine engine_{[] {
    EngineOptions options = threaded(1);
    options.batch_pushes = false;
    return options;
  }()};
  HeldWorker held_{engine_};
  std::mutex m_;
  std::vector<int> order_;
};

// No blocking call hands the held op over: the worker, left with the op of
// negative priority, takes it first.
TEST(HeldOps, AWorkerRunsHeldOpsBeforeOpsOfNegativePriority) {
  PrioritiesBesideBusyNeighbours gate;
  const PinnedNeighbours busy(true);
  for (const int priority : {0, 5, -3, 9}) gate.push(priority);
  gate.open();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (gate.order().size() < 4 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(microseconds(100));
  }
  EXPECT_EQ(gate.order(), (std::vector<int>{9, 5, 0, -3}));
  gate.engine().wait_all();
}

// wait_all runs what is queued on its caller: an op of positive priority
// before the ops its thread held. That op opens the worker's gate.
TEST(HeldOps, WaitAllRunsOpsOfPositivePriorityBeforeItsHeldOps) {
  PrioritiesBesideBusyNeighbours gate;
  const PinnedNeighbours busy(true);
  gate.push(0);
  gate.push(5, /*opens=*/true);
  gate.engine().wait_all();
  EXPECT_EQ(gate.order(), (std::vector<int>{5, 0}));
}

// A worker out of work beside busy neighbours sleeps for its engine's next
// submit (devices/cpu/parked_workers.h), holding one of oneTBB's threads:
// another engine of the process still gets a worker for what its blocking
// calls wait for (oneTBB has a single thread to lend on a 2-core machine),
// and each engine's parked worker runs its next ops. The pauses let the
// workers run out of work and park.
TEST(HeldOps, AParkedWorkerLeavesAnotherEngineOfTheProcessAWorker) {
  const PinnedNeighbours busy(true);
  Engine first(threaded(1)), second(threaded(1));
  const Var a = first.new_var(), b = second.new_var();
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> on_caller{0};
  int in_a = 0, in_b = 0;
  for (int round = 1; round <= 5; ++round) {
    for (Engine* engine : {&first, &second}) {
      int& value = engine == &first ? in_a : in_b;
      engine->push([&, round](RunContext&) {
        if (std::this_thread::get_id() == caller) ++on_caller;
        value = round;
      }, {}, {engine == &first ? a : b});
      engine->wait_to_read(engine == &first ? a : b);
      ASSERT_EQ(value, round);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  EXPECT_EQ(on_caller.load(), 0) << "wait_to_read runs no op on its caller: a worker ran each";
}

// Over the bound of ops in flight, a frontend whose ops wait for it does not
// stall: they complete while it pushes, before its wait_all.
TEST(HeldOps, BackPressureStartsAWorkerForTheHeldOps) {
  const PinnedNeighbours busy(true);
  constexpr std::size_t kBound = 64;
  constexpr int kOps = 5000;
  Engine engine(threaded(1, kBound));
  std::vector<Var> vars;
  for (int i = 0; i < 8; ++i) vars.push_back(engine.new_var());
  std::atomic<int> ran{0};
  for (int i = 0; i < kOps; ++i) engine.push([&](RunContext&) { ++ran; }, {}, {vars[i % vars.size()]});
  const int before_wait = ran.load();
  engine.wait_all();
  EXPECT_EQ(ran.load(), kOps);
  // The bound, the pushes between two checks of it, and a batch.
  EXPECT_GE(before_wait, kOps - 4 * static_cast<int>(kBound));
}

// Past kHeldBurst ops in flight a frontend that streams pushes hands its
// held ops to a worker and yields while they run: ops run before it stops
// pushing, as none would otherwise (the flush timer leaves the ops of a
// frontend that streams pushes to it).
TEST(HeldOps, PastTheBurstAFrontendHandsItsHeldOpsToAWorker) {
  const PinnedNeighbours busy(true);
  constexpr auto kBurst = static_cast<int>(detail::tuning::kHeldBurst);
  constexpr int kOps = 16 * kBurst;
  Engine engine(threaded(1));
  std::vector<Var> vars;
  for (int i = 0; i < 8; ++i) vars.push_back(engine.new_var());
  std::atomic<bool> pushing{true};
  std::atomic<int> ran{0}, ran_while_pushing{0};
  for (int i = 0; i < kOps; ++i) {
    engine.push([&](RunContext&) {
      ++ran;
      if (pushing.load()) ++ran_while_pushing;
    }, {}, {vars[i % vars.size()]});
  }
  pushing = false;
  engine.wait_all();
  EXPECT_EQ(ran.load(), kOps);
  EXPECT_GE(ran_while_pushing.load(), kBurst);
}

// The median of the ops in flight after each of `ops` pushes of 5 µs ops
// from one frontend to one worker.
int median_in_flight_of_pushes(int ops) {
  Engine engine(threaded(1));
  std::vector<Var> vars;
  for (int i = 0; i < 8; ++i) vars.push_back(engine.new_var());
  std::atomic<int> ran{0};
  std::vector<int> in_flight;
  in_flight.reserve(static_cast<std::size_t>(ops));
  for (int i = 0; i < ops; ++i) {
    engine.push([&](RunContext&) {
      const auto until = std::chrono::steady_clock::now() + microseconds(5);
      while (std::chrono::steady_clock::now() < until) {
      }
      ++ran;
    }, {}, {vars[i % vars.size()]});
    in_flight.push_back(i + 1 - ran.load());
  }
  engine.wait_all();
  EXPECT_EQ(ran.load(), ops);
  std::nth_element(in_flight.begin(), in_flight.begin() + ops / 2, in_flight.end());
  return in_flight[static_cast<std::size_t>(ops / 2)];
}

// Busy neighbours make the process's spinners lose their cores, and after
// a few losses no engine thread spins for up to 0.64 s (Contention). The
// frontend's wait past a burst is no such spin: it still hands the burst
// over and waits while a worker runs it, so the ops in flight stay near a
// burst instead of growing with every push (then their median is half the
// pushes). The worker may be off its core for whole time slices, when the
// frontend pushes on, so the best of three tries.
TEST(HeldOps, PastTheBurstAFrontendWaitsEvenWhileTheProcessLosesCores) {
  const PinnedNeighbours busy(true);
  constexpr auto kBurst = static_cast<int>(detail::tuning::kHeldBurst);
  int best = std::numeric_limits<int>::max();
  for (int attempt = 0; attempt < 3 && best > 2 * kBurst; ++attempt) {
    for (int i = 0; i < 8; ++i) detail::Contention::process().lost_core(SpinClock::now());
    ASSERT_TRUE(detail::Contention::process().active(SpinClock::now()));
    best = std::min(best, median_in_flight_of_pushes(16 * kBurst));
  }
  EXPECT_LE(best, 2 * kBurst);
}

// The frontend's wait for a burst is bounded by the workers' progress: an op
// that waits for what the frontend does after its pushes holds the one
// worker, and the frontend pushes on instead of waiting for it.
TEST(HeldOps, ABurstDoesNotWaitForAnOpThatWaitsForItsFrontend) {
  const PinnedNeighbours busy(true);
  constexpr int kOps = 4 * static_cast<int>(detail::tuning::kHeldBurst);
  for (const int workers : {1, 2}) {
    Engine engine(threaded(workers));
    const Var gate = engine.new_var(), v = engine.new_var();
    std::atomic<bool> go{false}, saw_go{false};
    engine.push([&](RunContext&) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!go.load() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      saw_go = go.load();
    }, {}, {gate});
    std::atomic<int> ran{0};
    for (int i = 0; i < kOps; ++i) engine.push([&](RunContext&) { ++ran; }, {}, {v});
    go = true;
    engine.wait_all();
    EXPECT_TRUE(saw_go.load()) << workers << " workers: the frontend waited for the op that waited for it";
    EXPECT_EQ(ran.load(), kOps);
  }
}

// A worker in a long op completes nothing for as long as it runs: the
// frontend's burst wait finds it stalled, with its CPU time growing, and
// does not wait again until an op completes; it pushes on at its own pace.
// Waiting kHeldBurstStall at each check (every 64 pushes past the burst)
// would take over 250 of them for these pushes; the bound allows a quarter
// of that. Beside a real neighbour (a thread spinning all the while), a
// yield of the waiting frontend may last the neighbour's time slice, longer
// than the whole wait may, and the stall must still be judged: otherwise
// the frontend pushed 64 ops per time slice. A long op that sleeps (waits
// for I/O, say) uses no CPU time but is no worker off its core either: the
// frontend does not wait for it again either. Two rounds, the second timed
// once the op blocks are allocated; sanitizers slow the pushes themselves
// too much for a bound in time.
enum class LongOp { spins, sleeps };

void pushes_past_a_long_op_keep_their_pace(bool spinning_neighbour, LongOp long_op = LongOp::spins) {
  const PinnedNeighbours busy(true);
  std::jthread neighbour;  // stopped and joined however the test ends
  if (spinning_neighbour) {
    neighbour = std::jthread([](const std::stop_token& stop) {
      while (!stop.stop_requested()) {
      }
    });
  }
  constexpr auto kBurst = static_cast<int>(detail::tuning::kHeldBurst);
  constexpr int kChecks = 256, kPushesPerCheck = 64;
  Engine engine(threaded(1));
  const Var gate = engine.new_var(), v = engine.new_var();
  std::atomic<int> ran{0};
  const auto push = [&](int ops) {
    for (int i = 0; i < ops; ++i) engine.push([&](RunContext&) { ++ran; }, {}, {v});
  };
  // Pushes behind a long op on the one worker, which runs until they are
  // pushed; returns how long the pushes past the first burst took.
  const auto round_behind_a_long_op = [&] {
    std::atomic<bool> go{false}, saw_go{false};
    engine.push([&](RunContext&) {
      if (long_op == LongOp::sleeps) go.wait(false);
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!go.load() && std::chrono::steady_clock::now() < give_up) {
      }
      saw_go = go.load();
    }, {}, {gate});
    ran = 0;
    push(2 * kBurst);  // past the burst: the first wait finds the worker in the long op
    const auto start = std::chrono::steady_clock::now();
    push(kChecks * kPushesPerCheck);
    const auto pushing = std::chrono::steady_clock::now() - start;
    go = true;
    go.notify_all();
    engine.wait_all();
    EXPECT_TRUE(saw_go.load());
    EXPECT_EQ(ran.load(), 2 * kBurst + kChecks * kPushesPerCheck);
    return pushing;
  };
  round_behind_a_long_op();
  [[maybe_unused]] const auto pushing = round_behind_a_long_op();
  neighbour.request_stop();
#if !defined(__SANITIZE_ADDRESS__) && !DEPENGINE_TSAN
  EXPECT_LT(pushing, kChecks / 4 * detail::tuning::kHeldBurstStall);
#endif
}

TEST(HeldOps, AFrontendWaitsForALongOpOnceNotAtEveryCheck) { pushes_past_a_long_op_keep_their_pace(false); }

TEST(HeldOps, BesideARealNeighbourAFrontendWaitsForALongOpOnce) {
  if (cores() < 2) GTEST_SKIP() << "one core: the neighbour, the long op and the frontend would share it";
  pushes_past_a_long_op_keep_their_pace(true);
}

TEST(HeldOps, AFrontendWaitsForASleepingOpOnceNotAtEveryCheck) {
  pushes_past_a_long_op_keep_their_pace(false, LongOp::sleeps);
}

// ---------------------------------------------------------------- how many workers beside neighbours

TEST(HeldOpsPolicy, ActiveWorkersKeepToTheCoresTheNeighboursLeave) {
  using detail::CpuExecutor;
  EXPECT_EQ(CpuExecutor::active_limit(2, 2, 0), 2);  // no neighbours: every worker
  EXPECT_EQ(CpuExecutor::active_limit(2, 2, 1), 1);
  EXPECT_EQ(CpuExecutor::active_limit(2, 2, 2), 1);  // always one, for progress
  EXPECT_EQ(CpuExecutor::active_limit(16, 16, 1), 15);
  EXPECT_EQ(CpuExecutor::active_limit(4, 16, 3), 4);  // no more than the engine has
  EXPECT_EQ(CpuExecutor::active_limit(8, 16, 10), 6);
}

// How many workers (threads other than `caller`) run ops at once, at most.
class WorkersAtOnce {
 public:
  explicit WorkersAtOnce(std::thread::id caller) : caller_(caller) {}
  /// Runs `body` as part of an op, counted while it runs on a worker.
  template <typename Body>
  void run(Body&& body) {
    const bool worker = std::this_thread::get_id() != caller_;
    if (worker) {
      const int now = ++running_;
      for (int seen = most_.load(); now > seen && !most_.compare_exchange_weak(seen, now);) {
      }
    }
    body();
    if (worker) --running_;
  }
  int most() const { return most_.load(); }

 private:
  const std::thread::id caller_;
  std::atomic<int> running_{0}, most_{0};
};

// Beside a neighbour that keeps a core busy, no more workers run ops at
// once than the cores it leaves: more would take turns with it and with
// the frontend. Short ops (2 µs: the cap holds for those), enough of them
// that the frontend hands a burst to a worker. The cap lets one more past
// once a whole tuning::kQueueWatchWindow went by with few completions (below),
// which a slow build or a loaded machine may see: so only rounds shorter
// than that window count, each after the workers of the previous one
// retired (which ends the cap and its escapes).
TEST(HeldOps, BesideABusyNeighbourNoMoreWorkersRunThanTheCoresItLeaves) {
  const PinnedNeighbours busy(true);  // one core
  const int limit = detail::CpuExecutor::active_limit(cores(), cores(), 1);
  Engine engine(threaded(cores()));
  constexpr int kOps = 2 * detail::tuning::kHeldBurst, kRounds = 8;
  std::vector<Var> vars;
  for (int i = 0; i < kOps; ++i) vars.push_back(engine.new_var());
  int fast = 0, over = 0, on_workers = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    WorkersAtOnce workers(std::this_thread::get_id());
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kOps; ++i) {
      engine.push([&](RunContext&) {
        workers.run([] {
          const auto until = std::chrono::steady_clock::now() + microseconds(2);
          while (std::chrono::steady_clock::now() < until) {
          }
        });
      }, {}, {vars[static_cast<std::size_t>(i)]});
    }
    engine.wait_all();
    if (workers.most() >= 1) ++on_workers;
    if (std::chrono::steady_clock::now() - start >= detail::tuning::kQueueWatchWindow) continue;
    ++fast;
    if (workers.most() > limit) ++over;
  }
  EXPECT_GE(on_workers, 1) << "a worker ran some of the ops";
  if (fast == 0) GTEST_SKIP() << "no round ran within a cap window: the cap may have let more workers past";
  EXPECT_EQ(over, 0) << "of " << fast << " rounds within a cap window, more than " << limit
                     << " workers at once in some";
}

// Long ops (over tuning::kLongOp each) beside the same neighbour: a
// hand-off costs a fraction of one, and after a tuning::kQueueWatchWindow of them
// one more worker is let past the cap, up to every worker.
TEST(HeldOps, LongOpsGetPastTheCap) {
  if (cores() < 2) GTEST_SKIP() << "one core: a cap of one worker is every worker";
  const PinnedNeighbours busy(true);
  const int limit = detail::CpuExecutor::active_limit(cores(), cores(), 1);
  Engine engine(threaded(cores()));
  WorkersAtOnce workers(std::this_thread::get_id());
  constexpr int kOps = 400;
  for (int i = 0; i < kOps; ++i) {
    engine.push([&](RunContext&) { workers.run([] { std::this_thread::sleep_for(microseconds(200)); }); }, {},
                {engine.new_var()});
  }
  engine.wait_all();
  EXPECT_GT(workers.most(), limit) << "workers at once, of " << cores();
}

// Ops that wait for each other, more than the cap lets run at once: the
// active workers complete nothing, and after a tuning::kQueueWatchWindow one more
// is let past the cap, until all of them run. The frontend waits without a
// blocking call (which would run the queued ones itself).
TEST(HeldOps, OpsThatWaitForEachOtherGetPastTheCap) {
  const PinnedNeighbours busy(true);  // one core: a cap of cores() - 1
  const int parties = cores();
  Engine engine(threaded(parties));
  for (int round = 0; round < 3; ++round) {
    std::atomic<int> arrived{0};
    std::atomic<bool> met{true};
    for (int i = 0; i < parties; ++i) {
      engine.push([&](RunContext&) {
        arrived.fetch_add(1);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (arrived.load() < parties) {
          if (std::chrono::steady_clock::now() > deadline) {
            met = false;
            return;
          }
          std::this_thread::yield();
        }
      }, {}, {engine.new_var()});
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (arrived.load() < parties && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(microseconds(200));
    }
    engine.wait_all();
    ASSERT_TRUE(met.load()) << "round " << round << ": " << parties << " ops that wait for each other";
  }
}

}  // namespace
}  // namespace depengine
