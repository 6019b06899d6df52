// Randomized differential tests of graphs: random workloads captured into
// graphs and replayed 1-100 times, interleaved with eager pushes on the same
// variables from 1 or 4 threads and with waits on them, must give bit for bit
// what the naive engine gives when it pushes the same ops eagerly (no graph
// at all), errors included.

#include <gtest/gtest.h>

#include <initializer_list>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <depengine/completion.h>
#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <depengine/graph.h>

#include "bench/support/random_workload.h"
#include "tests/support/pinned_neighbours.h"

namespace depengine {
namespace {

using testing::OpRecord;
using testing::RandomOp;
using testing::RandomState;

constexpr int kShared = 16;      // variables of the program
constexpr int kInside = 3;       // variables each graph makes for itself
constexpr int kGraphs = 4;
constexpr int kEagerOps = 600;
// This graph has asynchronous ops (pushed again at each replay); the others
// are plain CPU ops (run by the counters computed at capture).
constexpr int kAsyncGraph = 3;
// This graph's ops run on an emulated device (one replay op there).
constexpr int kDeviceGraph = 2;

// One graph's recorded ops: indices below kShared are shared variables,
// those from kShared on the graph's own.
struct GraphSpec {
  std::vector<RandomOp> ops;
};

// Waits in the middle of the program: on a shared variable or on one a
// graph made for itself (which its replays may hold without entries).
constexpr int kWaits = 40;
constexpr int kWaitable = kShared + kGraphs * kInside;
constexpr int kFirstWait = -1000;

// What the program does, in order: an eager op (>= 0, an index into the
// eager ops), a replay of graph -1 - step, or (from kFirstWait down) a
// wait_to_read of waitable variable kFirstWait - step.
struct Script {
  std::vector<RandomOp> eager;
  std::vector<GraphSpec> graphs;
  std::vector<int> steps;
  bool with_errors = false;
};

Script make_script(std::uint64_t seed, bool with_errors) {
  std::mt19937_64 rng(seed);
  Script s;
  s.with_errors = with_errors;
  s.eager = testing::make_random_ops(seed, kShared, kEagerOps, 3);
  for (int g = 0; g < kGraphs; ++g) {
    const int size = 1 + static_cast<int>(rng() % 100);
    s.graphs.push_back({testing::make_random_ops(seed * 31 + g, kShared + kInside, size, 3)});
  }
  // Every eager op once, and 1-100 replays in all, spread between them.
  const int replays = 1 + static_cast<int>(rng() % 100);
  for (int i = 0; i < kEagerOps; ++i) s.steps.push_back(i);
  for (int r = 0; r < replays; ++r) {
    const auto at = static_cast<std::ptrdiff_t>(rng() % (s.steps.size() + 1));
    s.steps.insert(s.steps.begin() + at, -1 - static_cast<int>(rng() % kGraphs));
  }
  for (int w = 0; w < kWaits; ++w) {
    const auto at = static_cast<std::ptrdiff_t>(rng() % (s.steps.size() + 1));
    s.steps.insert(s.steps.begin() + at, kFirstWait - static_cast<int>(rng() % kWaitable));
  }
  return s;
}

// Whether run `op_id` throws: a few ops, deterministically.
bool throws(const Script& s, int op_id) { return s.with_errors && op_id % 41 == 7; }

struct Outcome {
  std::vector<std::uint64_t> shared_values;
  std::vector<std::vector<std::uint64_t>> inside_values;  // per graph
  std::vector<std::vector<OpRecord>> eager_records;
  std::vector<std::vector<std::vector<OpRecord>>> graph_records;  // per graph, per op: one per run
  std::vector<std::string> errors;  // per shared variable: what wait_to_read reported
  std::vector<std::string> waits;   // per wait step, in order: what it reported
};

std::string wait_outcome(Engine& engine, Var v) {
  try {
    engine.wait_to_read(v);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

// The state a graph's op sees: shared variables, then the graph's own.
struct GraphState {
  explicit GraphState(RandomState& shared) : shared(shared), own(kInside) {}
  RandomState& shared;
  RandomState own;
};

void run_graph_op(const RandomOp& op, int op_id, GraphState& st, std::vector<OpRecord>& runs, bool fail) {
  // Map onto one RandomState view: copy in, run, copy back the written value.
  RandomState view(kShared + kInside);
  auto load = [&](int v) {
    if (v < kShared) {
      view.value[v] = st.shared.value[v];
      view.version[v] = st.shared.version[v];
    } else {
      view.value[v] = st.own.value[v - kShared];
      view.version[v] = st.own.version[v - kShared];
    }
  };
  for (int r : op.reads) load(r);
  load(op.write);
  if (fail) throw std::runtime_error("graph op " + std::to_string(op_id) + " failed");
  OpRecord record;
  testing::run_random_op(op, op_id, view, record);
  runs.push_back(record);
  if (op.write < kShared) {
    st.shared.value[op.write] = view.value[op.write];
    st.shared.version[op.write] = view.version[op.write];
  } else {
    st.own.value[op.write - kShared] = view.value[op.write];
    st.own.version[op.write - kShared] = view.version[op.write];
  }
}

// Runs the script. With `use_graphs`, each graph is captured once and
// replayed; without, its ops are pushed eagerly at each replay (the reference).
Outcome run(const Script& s, EngineOptions options, int pushers, bool use_graphs) {
  Engine engine(options);
  add_emulated_device(engine, 0, {.compute_streams = 2});
  std::vector<Var> shared;
  for (int i = 0; i < kShared; ++i) shared.push_back(engine.new_var("s" + std::to_string(i)));
  RandomState state(kShared);
  std::vector<GraphState> graph_states;
  for (int g = 0; g < kGraphs; ++g) graph_states.emplace_back(state);
  Outcome out;
  out.eager_records.resize(kEagerOps);
  out.graph_records.resize(kGraphs);
  for (int g = 0; g < kGraphs; ++g) out.graph_records[g].resize(s.graphs[g].ops.size());

  // The reference's own variables for each graph, made once (static memory).
  std::vector<std::vector<Var>> reference_own(kGraphs);
  auto push_graph_ops = [&](int g, const std::vector<Var>& own) {
    const std::vector<RandomOp>& ops = s.graphs[g].ops;
    for (int j = 0; j < static_cast<int>(ops.size()); ++j) {
      auto var_of = [&](int v) { return v < kShared ? shared[v] : own[v - kShared]; };
      std::vector<Var> reads;
      for (int r : ops[j].reads) reads.push_back(var_of(r));
      const int op_id = 100000 * (g + 1) + j;
      const bool fail = throws(s, op_id);
      if (g == kAsyncGraph && j % 3 == 1) {
        // An asynchronous op: the graph replays by pushing each op again.
        engine.push_async(
            [&, g, j, op_id, fail](RunContext&, Completion done) {
              try {
                run_graph_op(s.graphs[g].ops[j], op_id, graph_states[g], out.graph_records[g][j], fail);
                done();
              } catch (...) {
                done(std::current_exception());
              }
            },
            reads, {var_of(ops[j].write)});
        continue;
      }
      engine.push(
          [&, g, j, op_id, fail](RunContext&) {
            run_graph_op(s.graphs[g].ops[j], op_id, graph_states[g], out.graph_records[g][j], fail);
          },
          reads, {var_of(ops[j].write)},
          {.device = g == kDeviceGraph ? Device::emulated(0) : Device::cpu()});
    }
  };
  std::vector<Graph> graphs;
  // Every variable a wait step may name: the shared ones, then the graphs' own.
  std::vector<Var> waitable = shared;
  for (int g = 0; g < kGraphs; ++g) {
    if (use_graphs) {
      graphs.push_back(engine.capture([&] {
        std::vector<Var> own;
        for (int i = 0; i < kInside; ++i) own.push_back(engine.new_var());
        push_graph_ops(g, own);
        waitable.insert(waitable.end(), own.begin(), own.end());
      }));
    } else {
      for (int i = 0; i < kInside; ++i) reference_own[g].push_back(engine.new_var());
      waitable.insert(waitable.end(), reference_own[g].begin(), reference_own[g].end());
    }
  }

  std::mutex turn;
  std::size_t next = 0;
  auto pusher = [&] {
    for (;;) {
      std::unique_lock lock(turn);
      const std::size_t i = next++;
      if (i >= s.steps.size()) return;
      const int step = s.steps[i];
      if (step <= kFirstWait) {
        out.waits.push_back(wait_outcome(engine, waitable[kFirstWait - step]));
      } else if (step >= 0) {
        const RandomOp& op = s.eager[step];
        std::vector<Var> reads;
        for (int r : op.reads) reads.push_back(shared[r]);
        const bool fail = throws(s, step);
        engine.push(
            [&, step, fail](RunContext&) {
              if (fail) throw std::runtime_error("eager op " + std::to_string(step) + " failed");
              OpRecord record;
              testing::run_random_op(s.eager[step], step, state, record);
              out.eager_records[step].push_back(record);
            },
            reads, {shared[op.write]});
      } else if (use_graphs) {
        engine.replay(graphs[-1 - step]);
      } else {
        push_graph_ops(-1 - step, reference_own[-1 - step]);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < pushers; ++t) threads.emplace_back(pusher);
  for (auto& t : threads) t.join();
  for (Var v : shared) {
    try {
      engine.wait_to_read(v);
      out.errors.emplace_back();
    } catch (const std::exception& e) {
      out.errors.emplace_back(e.what());
    }
  }
  try {
    engine.wait_all();
  } catch (const std::exception&) {
    // Failures of the graphs' own variables: which one comes first is not ordered.
  }
  out.shared_values = state.value;
  for (const GraphState& gs : graph_states) out.inside_values.push_back(gs.own.value);
  graphs.clear();
  return out;
}

class GraphDifferential : public ::testing::TestWithParam<std::tuple<int, int>> {};

INSTANTIATE_TEST_SUITE_P(WorkersAndPushers, GraphDifferential,
                         ::testing::Combine(::testing::Values(1, 2, 4), ::testing::Values(1, 4)),
                         [](const auto& info) {
                           return "workers" + std::to_string(std::get<0>(info.param)) + "_pushers" +
                                  std::to_string(std::get<1>(info.param));
                         });

// Runs the seeds' scripts on `kinds` with `workers` and `pushers`, each
// against the naive engine running it from one thread.
void expect_replays_match_the_naive_engine(int workers, int pushers, std::initializer_list<EngineKind> kinds) {
  for (int seed = 1; seed <= 6; ++seed) {
    const bool with_errors = seed % 3 == 0;
    const Script s = make_script(seed * 7919 + workers * 13 + pushers, with_errors);
    const Outcome expected = run(s, {.kind = EngineKind::Naive, .read_environment = false}, 1, false);
    for (const EngineKind kind : kinds) {
      const Outcome actual = run(s, {.kind = kind, .cpu_threads = workers, .read_environment = false}, pushers, true);
      const std::string where = "seed " + std::to_string(seed) + (kind == EngineKind::Naive ? " naive" : " threaded");
      ASSERT_EQ(actual.shared_values, expected.shared_values) << where;
      ASSERT_EQ(actual.inside_values, expected.inside_values) << where;
      ASSERT_EQ(actual.errors, expected.errors) << where;
      ASSERT_EQ(actual.waits, expected.waits) << where;
      for (int i = 0; i < kEagerOps; ++i) ASSERT_EQ(actual.eager_records[i], expected.eager_records[i]) << where;
      for (int g = 0; g < kGraphs; ++g) {
        for (std::size_t j = 0; j < expected.graph_records[g].size(); ++j) {
          ASSERT_EQ(actual.graph_records[g][j], expected.graph_records[g][j]) << where << " graph " << g << " op " << j;
        }
      }
    }
  }
}

TEST_P(GraphDifferential, ReplaysMatchTheNaiveEngineBitForBit) {
  const auto [workers, pushers] = GetParam();
  expect_replays_match_the_naive_engine(workers, pushers, {EngineKind::Threaded, EngineKind::Naive});
}

// Beside busy neighbours (pinned), where the ops a frontend's pushes and
// replays make ready are held for it (engine/held_ops.h).
TEST(GraphDifferentialHeldOps, ReplaysMatchTheNaiveEngineWithOpsHeldForTheirFrontends) {
  const PinnedNeighbours busy(true);
  for (const auto [workers, pushers] : {std::pair{1, 1}, std::pair{2, 4}}) {
    expect_replays_match_the_naive_engine(workers, pushers, {EngineKind::Threaded});
  }
}

}  // namespace
}  // namespace depengine
