// Randomized differential tests: random workloads on the threaded engine
// must give bit-for-bit the results of the naive engine, for several worker
// counts and pushing threads; and conflicting operations never overlap.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include <depengine/engine.h>

#include "bench/support/random_workload.h"
#include "sync/machine_load.h"
#include "sync/usable_cores.h"
#include "tests/support/pinned_neighbours.h"

namespace depengine {
namespace {

using testing::OpRecord;
using testing::RandomOp;
using testing::RandomState;

constexpr int kVars = 24;
constexpr int kOps = 3000;
constexpr int kSeeds = 12;

struct RunResult {
  std::vector<std::uint64_t> values;
  std::vector<OpRecord> records;
};

// Runs `ops` with `pushers` frontend threads taking turns op by op (so that
// the push order, and hence the expected result, is fixed), optionally with
// blocking calls sprinkled in; with `heavy_ops`, two ops in three declare
// data (PushOptions::bytes), which the workers may keep (KeptOps).
RunResult run(EngineOptions options, const std::vector<RandomOp>& ops, int pushers, bool with_waits,
              bool heavy_ops = false) {
  Engine engine(options);
  std::vector<Var> vars;
  for (int i = 0; i < kVars; ++i) vars.push_back(engine.new_var());
  RandomState state(kVars);
  std::vector<OpRecord> records(ops.size());

  std::mutex turn;
  int next = 0;
  auto pusher = [&] {
    for (;;) {
      std::unique_lock lock(turn);
      const int i = next++;
      if (i >= static_cast<int>(ops.size())) return;
      testing::push_random_op(engine, vars, ops, i, state, records, heavy_ops && i % 3 != 0 ? 1u << 20 : 0);
      lock.unlock();
      if (with_waits && i % 211 == 0) engine.wait_to_read(vars[ops[i].write]);
      if (with_waits && i % 503 == 0) engine.wait_to_write(vars[i % kVars]);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < pushers; ++t) threads.emplace_back(pusher);
  for (auto& t : threads) t.join();
  engine.wait_all();
  return {state.value, records};
}

class Differential : public ::testing::TestWithParam<std::tuple<int, int>> {};

INSTANTIATE_TEST_SUITE_P(WorkersAndPushers, Differential,
                         ::testing::Combine(::testing::Values(1, 2, 4), ::testing::Values(1, 4)),
                         [](const auto& info) {
                           return "workers" + std::to_string(std::get<0>(info.param)) + "_pushers" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST_P(Differential, MatchesTheNaiveEngineBitForBit) {
  const auto [workers, pushers] = GetParam();
  for (int seed = 1; seed <= kSeeds; ++seed) {
    const int max_reads = 1 + seed % 5;
    const auto ops = testing::make_random_ops(seed * 7919 + workers, kVars, kOps, max_reads);
    const RunResult expected = run({.kind = EngineKind::Naive, .read_environment = false}, ops, 1, false);
    const RunResult actual = run({.kind = EngineKind::Threaded, .cpu_threads = workers,
                                  .max_ops_in_flight = seed % 2 ? 64u : 1u << 16, .read_environment = false},
                                 ops, pushers, seed % 3 == 0);
    ASSERT_EQ(actual.values, expected.values) << "seed " << seed;
    for (int i = 0; i < kOps; ++i) ASSERT_EQ(actual.records[i], expected.records[i]) << "seed " << seed << " op " << i;
  }
}

// The same with ops that declare data: a worker keeps those its completion
// made ready beside its continuation, and another worker may take them from
// it (KeptOps).
TEST_P(Differential, MatchesTheNaiveEngineWithOpsKeptForTheirData) {
  const auto [workers, pushers] = GetParam();
  for (int seed = 1; seed <= kSeeds / 2; ++seed) {
    const auto ops = testing::make_random_ops(seed * 3571 + workers, kVars, kOps, 1 + seed % 5);
    const RunResult expected = run({.kind = EngineKind::Naive, .read_environment = false}, ops, 1, false);
    const RunResult actual = run({.kind = EngineKind::Threaded, .cpu_threads = workers,
                                  .max_ops_in_flight = seed % 2 ? 64u : 1u << 16, .read_environment = false},
                                 ops, pushers, seed % 3 == 0, /*heavy_ops=*/true);
    ASSERT_EQ(actual.values, expected.values) << "seed " << seed;
    for (int i = 0; i < kOps; ++i) ASSERT_EQ(actual.records[i], expected.records[i]) << "seed " << seed << " op " << i;
  }
}

// The same with neighbours that want every core: threads that spin without
// pause, as a busy machine's other programs do, so that the engine's threads
// are descheduled at any point (waits for room, idle spins, hand-offs). It
// goes on with more seeds, for a few seconds at most, until the engine has
// seen the neighbours (MachineLoad: a window of samples), so that the
// frontend's policy beside them runs too.
TEST(DifferentialBusyNeighbours, MatchesTheNaiveEngineWithTheCoresTaken) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> neighbours;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < cores; ++i) {
    neighbours.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool seen = false;
  for (int seed = 1; seed <= 4 || (!seen && std::chrono::steady_clock::now() < deadline); ++seed) {
    seen = seen || depengine::detail::MachineLoad::process().neighbours_busy();
    for (const auto [workers, pushers] : {std::pair{1, 1}, std::pair{2, 2}}) {
      const auto ops = testing::make_random_ops(seed * 104729 + workers, kVars, kOps / 3, 1 + seed % 4);
      const RunResult expected = run({.kind = EngineKind::Naive, .read_environment = false}, ops, 1, false);
      const RunResult actual = run({.kind = EngineKind::Threaded, .cpu_threads = workers,
                                    .max_ops_in_flight = seed % 2 ? 64u : 1u << 16, .read_environment = false},
                                   ops, pushers, seed % 2 == 0);
      EXPECT_EQ(actual.values, expected.values) << "seed " << seed << ", " << workers << " workers";
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (actual.records[i] != expected.records[i]) {
          ADD_FAILURE() << "seed " << seed << " op " << i;
          break;
        }
      }
    }
  }
  stop.store(true);
  for (std::thread& t : neighbours) t.join();
}

// The same with the verdict pinned to busy neighbours, so that every run
// holds what its frontends make ready for their blocking calls (and the
// flush timer): several pushers, waits, back-pressure. Neighbours on one
// core, or on every core, where a frontend past a burst that no worker
// shares its CPU with pushes on (HeldOps::waits_for_burst).
class DifferentialHeldOps : public ::testing::TestWithParam<bool> {};

INSTANTIATE_TEST_SUITE_P(Neighbours, DifferentialHeldOps, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "OnEveryCore" : "OnOneCore";
                         });

TEST_P(DifferentialHeldOps, MatchesTheNaiveEngineWithOpsHeldForTheirFrontends) {
  const PinnedNeighbours busy(true, GetParam() ? depengine::detail::usable_cores() : 1);
  for (int seed = 1; seed <= kSeeds; ++seed) {
    for (const auto [workers, pushers] : {std::pair{1, 1}, std::pair{1, 3}, std::pair{2, 2}, std::pair{4, 3}}) {
      const auto ops = testing::make_random_ops(seed * 6271 + workers * 7 + pushers, kVars, kOps / 2, 1 + seed % 4);
      const RunResult expected = run({.kind = EngineKind::Naive, .read_environment = false}, ops, 1, false);
      const RunResult actual = run({.kind = EngineKind::Threaded, .cpu_threads = workers,
                                    .max_ops_in_flight = seed % 2 ? 64u : 1u << 16, .read_environment = false},
                                   ops, pushers, seed % 3 != 0);
      ASSERT_EQ(actual.values, expected.values) << "seed " << seed << ", " << workers << " workers";
      for (std::size_t i = 0; i < ops.size(); ++i) {
        ASSERT_EQ(actual.records[i], expected.records[i]) << "seed " << seed << " op " << i;
      }
    }
  }
}

// Concurrent pushers on disjoint written variables, all reading a shared set
// written before: each thread's results are fixed whatever the interleaving.
TEST(DifferentialConcurrentPushers, IndependentStreamsMatchTheNaiveEngine) {
  constexpr int kThreads = 4, kPerThread = 2000, kOwnVars = 6, kShared = 4;
  for (int seed = 1; seed <= 6; ++seed) {
    auto run_all = [&](EngineOptions options) {
      Engine engine(options);
      std::vector<Var> shared;
      std::vector<std::uint64_t> shared_values(kShared);
      for (int i = 0; i < kShared; ++i) {
        shared.push_back(engine.new_var());
        engine.push([&, i](RunContext&) { shared_values[i] = testing::mix(seed, i); }, {}, {shared[i]});
      }
      std::vector<std::vector<std::uint64_t>> values(kThreads, std::vector<std::uint64_t>(kOwnVars, 0));
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          std::vector<Var> own;
          for (int i = 0; i < kOwnVars; ++i) own.push_back(engine.new_var());
          std::mt19937 rng(seed * 100 + t);
          for (int k = 0; k < kPerThread; ++k) {
            const int w = rng() % kOwnVars, r = rng() % kOwnVars, s = rng() % kShared;
            std::vector<Var> reads{shared[s]};
            if (r != w) reads.push_back(own[r]);
            engine.push([&, t, w, r, s, k](RunContext&) {
              auto& v = values[t];
              v[w] = testing::mix(testing::mix(v[w], v[r]), shared_values[s] + k);
            }, reads, {own[w]});
          }
          for (Var v : own) engine.delete_var(v);
        });
      }
      for (auto& th : threads) th.join();
      engine.wait_all();
      return values;
    };
    const auto expected = run_all({.kind = EngineKind::Naive, .read_environment = false});
    const auto actual = run_all({.kind = EngineKind::Threaded, .cpu_threads = 2, .read_environment = false});
    ASSERT_EQ(actual, expected) << "seed " << seed;
  }
}

// Every op checks, while it runs, that no conflicting op runs at the same
// time: no other writer of anything it touches, no reader of what it writes.
TEST(Exclusion, ConflictingOperationsNeverOverlap) {
  constexpr int kVarsHere = 12;
  for (int seed = 1; seed <= 4; ++seed) {
    Engine engine({.cpu_threads = 4, .read_environment = false});
    std::vector<Var> vars;
    for (int i = 0; i < kVarsHere; ++i) vars.push_back(engine.new_var());
    std::vector<std::atomic<int>> writers(kVarsHere), readers(kVarsHere);
    std::atomic<int> violations{0};
    const auto ops = testing::make_random_ops(seed, kVarsHere, 20000, 3);
    std::atomic<int> next{0};
    auto pusher = [&] {
      for (int i; (i = next.fetch_add(1)) < static_cast<int>(ops.size());) {
        const RandomOp& op = ops[i];
        std::vector<Var> reads;
        for (int r : op.reads) reads.push_back(vars[r]);
        engine.push([&, &op = op](RunContext&) {
          if (writers[op.write].fetch_add(1) != 0 || readers[op.write].load() != 0) violations.fetch_add(1);
          for (int r : op.reads) {
            readers[r].fetch_add(1);
            if (writers[r].load() != 0) violations.fetch_add(1);
          }
          for (int spin = 0; spin < 50; ++spin) std::atomic_signal_fence(std::memory_order_seq_cst);
          for (int r : op.reads) readers[r].fetch_sub(1);
          writers[op.write].fetch_sub(1);
        }, reads, {vars[op.write]});
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) threads.emplace_back(pusher);
    for (auto& th : threads) th.join();
    engine.wait_all();
    EXPECT_EQ(violations.load(), 0) << "seed " << seed;
  }
}

}  // namespace
}  // namespace depengine
