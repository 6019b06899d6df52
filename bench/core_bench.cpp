// Core micro-benchmarks: the same task graphs, pushed from scratch every
// iteration, on depengine (threaded; `depengine_unbatched` with
// EngineOptions::batch_pushes off), the naive engine, oneTBB's flow graph,
// OpenMP tasks with depend clauses and, when built with it, StarPU. Ops are
// empty, so what is measured is the cost per operation of the runtime itself.
//
// Names are <workload>/<system>/<threads> (1, 2, and the usable cores where
// they are more); the counter ns_per_op is the wall time of one iteration
// (push/build, run, wait) divided by its op count.
// Every system gets the graph in the form its API takes, made outside the
// timed loop: the flow graph its edges, OpenMP its cells, depengine and
// StarPU each op's handles (OpAccesses).
//
// Workloads (each a list of ops with read and write sets):
//   chain        each op writes the variable the previous one wrote
//   independent  no shared variables
//   fan_out_in   one writer, 64 readers, one writer, repeated
//   stencil_1d   width 16: op (t, i) reads cells i-1, i, i+1 of step t-1
//   random_rw    the differential tests' random workload
// and replay_<workload> (bench/replay_bench.h): 1,000 ops of each captured
// once as a graph and replayed, against a flow graph built once and re-run.
//
// --busy_threads=N (contended mode): N threads of this process spin without
// pause through every benchmark, started in its setup and stopped in its
// teardown, whatever the system — a neighbour that wants the cores too.
//
// The cross-core round trip (bench/support/cross_core_roundtrip.h) is
// measured before the benchmarks, into the report's context
// (cross_core_roundtrip_ns), before each benchmark, as its counter
// roundtrip_before_ns, and after them all, on stderr.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <omp.h>
#ifdef DEPENGINE_BENCH_HAVE_STARPU
#include <starpu.h>

#include <cstdlib>
#endif

#include <depengine/engine.h>
#include <depengine/graph.h>

#include "bench/support/cross_core_roundtrip.h"
#include "bench/support/random_workload.h"
#include "sync/usable_cores.h"

namespace {

using depengine::Engine;
using depengine::EngineKind;
using depengine::RunContext;
using depengine::Var;

struct Op {
  std::vector<int> reads;
  std::vector<int> writes;
};

struct Workload {
  int num_vars = 0;
  std::vector<Op> ops;
  // For the peers that take explicit edges: each op's predecessors.
  std::vector<std::vector<int>> predecessors;
};

// Explicit edges from the read/write sets: the last writer (for a read), or
// the last writer and the readers since (for a write). Computed once, outside
// the timed loop: the peers are given what depengine infers.
void derive_edges(Workload& w) {
  std::vector<int> last_writer(w.num_vars, -1);
  std::vector<std::vector<int>> readers_since(w.num_vars);
  w.predecessors.assign(w.ops.size(), {});
  for (int i = 0; i < static_cast<int>(w.ops.size()); ++i) {
    auto& preds = w.predecessors[i];
    for (int v : w.ops[i].reads) {
      if (last_writer[v] >= 0) preds.push_back(last_writer[v]);
    }
    for (int v : w.ops[i].writes) {
      if (last_writer[v] >= 0) preds.push_back(last_writer[v]);
      preds.insert(preds.end(), readers_since[v].begin(), readers_since[v].end());
    }
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (int v : w.ops[i].reads) readers_since[v].push_back(i);
    for (int v : w.ops[i].writes) {
      last_writer[v] = i;
      readers_since[v].clear();
    }
  }
}

Workload chain(int n) {
  Workload w{.num_vars = 1};
  for (int i = 0; i < n; ++i) w.ops.push_back({{}, {0}});
  return w;
}

Workload independent(int n) {
  Workload w{.num_vars = n};
  for (int i = 0; i < n; ++i) w.ops.push_back({{}, {i}});
  return w;
}

Workload fan_out_in(int n) {
  constexpr int kFan = 64;
  Workload w{.num_vars = kFan + 1};
  while (static_cast<int>(w.ops.size()) + kFan + 2 <= n) {
    w.ops.push_back({{}, {0}});
    for (int r = 1; r <= kFan; ++r) w.ops.push_back({{0}, {r}});
    std::vector<int> all;
    for (int r = 1; r <= kFan; ++r) all.push_back(r);
    w.ops.push_back({all, {0}});
  }
  return w;
}

Workload stencil_1d(int n) {
  constexpr int kWidth = 16;
  Workload w{.num_vars = 2 * kWidth};
  for (int t = 0; static_cast<int>(w.ops.size()) + kWidth <= n; ++t) {
    const int cur = (t % 2) * kWidth, prev = ((t + 1) % 2) * kWidth;
    for (int i = 0; i < kWidth; ++i) {
      Op op{{}, {cur + i}};
      for (int d = -1; d <= 1; ++d) {
        if (i + d >= 0 && i + d < kWidth) op.reads.push_back(prev + i + d);
      }
      w.ops.push_back(op);
    }
  }
  return w;
}

Workload random_rw(int n) {
  constexpr int kVars = 64;
  Workload w{.num_vars = kVars};
  for (const auto& r : depengine::testing::make_random_ops(42, kVars, n, 3)) w.ops.push_back({r.reads, {r.write}});
  return w;
}

constexpr int kOpsPerIteration = 20000;

const Workload& workload(Workload (*make)(int)) {
  static std::map<Workload (*)(int), Workload> cache;
  auto it = cache.find(make);
  if (it == cache.end()) {
    Workload w = make(kOpsPerIteration);
    derive_edges(w);
    it = cache.emplace(make, std::move(w)).first;
  }
  return it->second;
}

// The ops' variables as one system's handles, laid out once: turning the
// workload's variable numbers into handles is the harness's work, not the
// runtime's, and the flow graph's loop likewise reads edges made beforehand.
template <class Handle>
class OpAccesses {
 public:
  /// `handle(v, write)`: the handle for reading (false) or writing (true) variable v.
  template <class MakeHandle>
  OpAccesses(const Workload& w, MakeHandle&& handle) {
    for (const Op& op : w.ops) {
      starts_.push_back(handles_.size());
      for (int v : op.reads) handles_.push_back(handle(v, false));
      reads_end_.push_back(handles_.size());
      for (int v : op.writes) handles_.push_back(handle(v, true));
    }
    starts_.push_back(handles_.size());
  }

  std::size_t ops() const { return reads_end_.size(); }
  std::span<const Handle> reads(std::size_t op) const { return range(starts_[op], reads_end_[op]); }
  std::span<const Handle> writes(std::size_t op) const { return range(reads_end_[op], starts_[op + 1]); }
  /// Reads, then writes (StarPU's access array is not const).
  std::span<Handle> all(std::size_t op) {
    return {handles_.data() + starts_[op], starts_[op + 1] - starts_[op]};
  }

 private:
  std::span<const Handle> range(std::size_t from, std::size_t to) const { return {handles_.data() + from, to - from}; }

  std::vector<Handle> handles_;
  std::vector<std::size_t> starts_;     // of each op's reads, and one past the last op
  std::vector<std::size_t> reads_end_;  // = start of each op's writes
};

// The cross-core round trip measured just before the running benchmark
// (before its busy neighbours started), reported with it: a benchmark that
// began in one of the machine's slow spells can be told apart.
double g_roundtrip_before_ns = -1;

template <class RunOnce>
void measure(benchmark::State& state, std::size_t ops, RunOnce&& run_once) {
  double total_ns = 0;
  std::size_t total_ops = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    run_once();
    total_ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    total_ops += ops;
  }
  state.counters["ns_per_op"] = total_ns / static_cast<double>(total_ops);
  if (g_roundtrip_before_ns >= 0) state.counters["roundtrip_before_ns"] = g_roundtrip_before_ns;
}

// Every iteration pushes the ops of `w` and waits for them.
void push_workload(benchmark::State& state, const Workload& w, EngineKind kind, bool batch_pushes) {
  const int threads = static_cast<int>(state.range(0));
  Engine engine({.kind = kind, .cpu_threads = threads, .read_environment = false, .batch_pushes = batch_pushes});
  std::vector<Var> vars;
  for (int i = 0; i < w.num_vars; ++i) vars.push_back(engine.new_var());
  const OpAccesses<Var> accesses(w, [&](int v, bool) { return vars[v]; });
  measure(state, w.ops.size(), [&] {
    for (std::size_t i = 0; i < accesses.ops(); ++i) {
      engine.push([](RunContext&) {}, accesses.reads(i), accesses.writes(i));
    }
    engine.wait_all();
  });
}

void run_engine(benchmark::State& state, Workload (*make)(int), EngineKind kind, bool batch_pushes) {
  push_workload(state, workload(make), kind, batch_pushes);
}

void run_tbb_flow_graph(benchmark::State& state, Workload (*make)(int)) {
  namespace flow = oneapi::tbb::flow;
  const Workload& w = workload(make);
  const int threads = static_cast<int>(state.range(0));
  oneapi::tbb::global_control parallelism(oneapi::tbb::global_control::max_allowed_parallelism, threads + 1);
  oneapi::tbb::task_arena arena(threads, 0);
  measure(state, w.ops.size(), [&] {
    arena.execute([&] {
      flow::graph g;
      std::vector<flow::continue_node<flow::continue_msg>> nodes;
      nodes.reserve(w.ops.size());
      for (std::size_t i = 0; i < w.ops.size(); ++i) {
        nodes.emplace_back(g, [](const flow::continue_msg&) {});
      }
      for (std::size_t i = 0; i < w.ops.size(); ++i) {
        for (int p : w.predecessors[i]) flow::make_edge(nodes[p], nodes[i]);
      }
      for (std::size_t i = 0; i < w.ops.size(); ++i) {
        if (w.predecessors[i].empty()) nodes[i].try_put(flow::continue_msg());
      }
      g.wait_for_all();
    });
  });
}

void run_omp_task(benchmark::State& state, Workload (*make)(int)) {
  const Workload& w = workload(make);
  const int threads = static_cast<int>(state.range(0));
  std::vector<char> cells(w.num_vars);
  char* c = cells.data();
  measure(state, w.ops.size(), [&] {
#pragma omp parallel num_threads(threads)
#pragma omp single
    for (const Op& op : w.ops) {
      // depend clauses are lists fixed at compile time: one form per shape.
      const int o = op.writes[0];
      const auto& r = op.reads;
      switch (r.size()) {
        case 0:
#pragma omp task depend(inout : c[o])
          {}
          break;
        case 1:
#pragma omp task depend(in : c[r[0]]) depend(inout : c[o])
          {}
          break;
        case 2:
#pragma omp task depend(in : c[r[0]], c[r[1]]) depend(inout : c[o])
          {}
          break;
        case 3:
#pragma omp task depend(in : c[r[0]], c[r[1]], c[r[2]]) depend(inout : c[o])
          {}
          break;
        default: {
          // fan_out_in's joining write: one dependence per reader's cell.
          const int* rp = r.data();
          const int nr = static_cast<int>(r.size());
#pragma omp task depend(iterator(j = 0 : nr), in : c[rp[j]]) depend(inout : c[o])
          {}
        }
      }
    }
  });
}

#ifdef DEPENGINE_BENCH_HAVE_STARPU
// StarPU, like depengine, infers the dependencies from each task's access
// modes (implicit data dependencies, sequential consistency on by default), so
// it is given the read and write sets, not the edges. Its runtime is a process
// singleton: each run starts it with its own worker count and shuts it down,
// as run_engine builds and destroys its Engine, outside the timed loop.
void run_starpu(benchmark::State& state, Workload (*make)(int)) {
  const Workload& w = workload(make);
  const int threads = static_cast<int>(state.range(0));
  // Its notices would interleave with the benchmark's table; a user's
  // STARPU_SILENT=0 still shows them.
  setenv("STARPU_SILENT", "1", 0);
  starpu_conf conf;
  starpu_conf_init(&conf);
  // The benchmark's name states the worker count and the devices: no STARPU_*
  // environment variable may change them.
  conf.precedence_over_environment_variables = 1;
  conf.ncpus = threads;
  conf.ncuda = 0;
  conf.nopencl = 0;
  conf.nmic = 0;
  conf.nmpi_ms = 0;
  // Empty tasks have no cost worth modelling; calibration would time each one.
  conf.calibrate = 0;
  conf.bus_calibrate = 0;
  // lws (locality work stealing) is StarPU 1.3's default and the policy meant
  // for CPU-only runs: a task made ready by a worker goes to that worker's
  // queue, as in oneTBB and depengine. The model-based ones (dm*) need
  // calibrated models, which empty tasks cannot give.
  conf.sched_policy_name = "lws";
  if (starpu_init(&conf) != 0) {
    state.SkipWithError("starpu_init failed");
    return;
  }
  starpu_codelet codelet;
  starpu_codelet_init(&codelet);
  codelet.cpu_funcs[0] = [](void**, void*) {};
  codelet.nbuffers = STARPU_VARIABLE_NBUFFERS;
  std::vector<int> cells(w.num_vars);
  std::vector<starpu_data_handle_t> handles(w.num_vars);
  for (int i = 0; i < w.num_vars; ++i) {
    starpu_variable_data_register(&handles[i], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&cells[i]),
                                  sizeof(int));
  }
  OpAccesses<starpu_data_descr> accesses(w, [&](int v, bool write) {
    return starpu_data_descr{handles[v], write ? STARPU_W : STARPU_R};
  });
  measure(state, w.ops.size(), [&] {
    for (std::size_t i = 0; i < accesses.ops(); ++i) {
      const std::span<starpu_data_descr> modes = accesses.all(i);
      const int ret = starpu_task_insert(&codelet, STARPU_DATA_MODE_ARRAY, modes.data(),
                                         static_cast<int>(modes.size()), 0);
      STARPU_CHECK_RETURN_VALUE(ret, "starpu_task_insert");
    }
    starpu_task_wait_for_all();
  });
  for (starpu_data_handle_t h : handles) starpu_data_unregister(h);
  starpu_shutdown();
}
#endif

// The contended mode's neighbours.
struct BusyNeighbours {
  int count = 0;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;

  void start() {
    stop.store(false);
    for (int i = 0; i < count; ++i) {
      threads.emplace_back([this] {
        while (!stop.load(std::memory_order_relaxed)) {
        }
      });
    }
  }
  void join() {
    stop.store(true);
    for (std::thread& t : threads) t.join();
    threads.clear();
  }
};
BusyNeighbours g_busy;

void before_each(const benchmark::State&) {
  g_roundtrip_before_ns = depengine::bench::cross_core_roundtrip_ns();
  g_busy.start();
}
void after_each(const benchmark::State&) { g_busy.join(); }
// Applied to every benchmark: the round trip, and the neighbours in contended mode.
void around_each(benchmark::internal::Benchmark* b) { b->Setup(before_each)->Teardown(after_each); }

// Takes --busy_threads=N out of argv (Google Benchmark rejects flags it does
// not know); returns N, 0 without the flag.
int take_busy_threads(int& argc, char** argv) {
  constexpr std::string_view flag = "--busy_threads=";
  int busy = 0, kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg.substr(0, flag.size()) != flag) {
      argv[kept++] = argv[i];
      continue;
    }
    const std::string value(arg.substr(flag.size()));
    char* end = nullptr;
    const long n = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || n < 0 || n > 256) {
      std::fprintf(stderr, "core_bench: --busy_threads takes a number from 0 to 256, not '%s'\n", value.c_str());
      std::exit(2);
    }
    busy = static_cast<int>(n);
  }
  argc = kept;
  return busy;
}

#include "bench/replay_bench.h"

// 1 and 2 threads everywhere, and every core the process may use where
// that is more (the tables of a many-core machine).
benchmark::internal::Benchmark* thread_counts(benchmark::internal::Benchmark* b) {
  b->Arg(1)->Arg(2);
  if (const int cores = depengine::detail::usable_cores(); cores > 2) b->Arg(cores);
  return b->UseRealTime()->Apply(around_each);
}

void register_all() {
  const std::pair<const char*, Workload (*)(int)> workloads[] = {
      {"chain", chain}, {"independent", independent}, {"fan_out_in", fan_out_in},
      {"stencil_1d", stencil_1d}, {"random_rw", random_rw}};
  for (const auto& [name, make] : workloads) {
    const std::string prefix(name);
    thread_counts(benchmark::RegisterBenchmark((prefix + "/depengine").c_str(), run_engine, make,
                                               EngineKind::Threaded, true));
    // Each push registered at once: what batching buys, in the same run.
    thread_counts(benchmark::RegisterBenchmark((prefix + "/depengine_unbatched").c_str(), run_engine, make,
                                               EngineKind::Threaded, false));
    benchmark::RegisterBenchmark((prefix + "/naive").c_str(), run_engine, make, EngineKind::Naive, true)
        ->Arg(1)->UseRealTime()->Apply(around_each);
    thread_counts(benchmark::RegisterBenchmark((prefix + "/tbb_flow_graph").c_str(), run_tbb_flow_graph, make));
    thread_counts(benchmark::RegisterBenchmark((prefix + "/omp_task").c_str(), run_omp_task, make));
#ifdef DEPENGINE_BENCH_HAVE_STARPU
    thread_counts(benchmark::RegisterBenchmark((prefix + "/starpu").c_str(), run_starpu, make));
#endif
  }
  register_replay();
}

std::string roundtrip_text(double ns) { return ns < 0 ? "unknown" : std::to_string(static_cast<long>(ns + 0.5)); }

}  // namespace

int main(int argc, char** argv) {
  g_busy.count = take_busy_threads(argc, argv);
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Before and after the benchmarks: a run in a slow spell of the machine's
  // cross-core traffic tells apart from one that was not.
  benchmark::AddCustomContext("cross_core_roundtrip_ns", roundtrip_text(depengine::bench::cross_core_roundtrip_ns()));
  benchmark::RunSpecifiedBenchmarks();
  std::fprintf(stderr, "core_bench: cross_core_roundtrip_ns at the end: %s\n",
               roundtrip_text(depengine::bench::cross_core_roundtrip_ns()).c_str());
  benchmark::Shutdown();
  return 0;
}
