// Replay benchmarks of core_bench (included by core_bench.cpp, inside its
// namespace, after the workloads): a 1,000-op graph built once and run again
// every iteration, on depengine (captured once, `Engine::replay` + wait_all),
// oneTBB's flow graph (built once, try_put + wait_for_all), and, as the cost
// without graphs, depengine and the naive engine pushing the same 1,000 ops
// eagerly every iteration. Names: replay_<workload>/<system>/<threads>.
// Needs <depengine/graph.h>, included at the top of core_bench.cpp.
#pragma once

constexpr int kOpsPerGraph = 1000;

const Workload& graph_workload(Workload (*make)(int)) {
  static std::map<Workload (*)(int), Workload> cache;
  auto it = cache.find(make);
  if (it == cache.end()) {
    Workload w = make(kOpsPerGraph);
    derive_edges(w);
    it = cache.emplace(make, std::move(w)).first;
  }
  return it->second;
}

void run_engine_replay(benchmark::State& state, Workload (*make)(int), EngineKind kind) {
  const Workload& w = graph_workload(make);
  const int threads = static_cast<int>(state.range(0));
  Engine engine({.kind = kind, .cpu_threads = threads, .read_environment = false});
  std::vector<Var> vars;
  for (int i = 0; i < w.num_vars; ++i) vars.push_back(engine.new_var());
  const OpAccesses<Var> accesses(w, [&](int v, bool) { return vars[v]; });
  depengine::Graph graph = engine.capture([&] {
    for (std::size_t i = 0; i < accesses.ops(); ++i) {
      engine.push([](RunContext&) {}, accesses.reads(i), accesses.writes(i));
    }
  });
  measure(state, w.ops.size(), [&] {
    engine.replay(graph);
    engine.wait_all();
  });
}

void run_engine_eager(benchmark::State& state, Workload (*make)(int), EngineKind kind) {
  push_workload(state, graph_workload(make), kind, /*batch_pushes=*/true);
}

void run_tbb_flow_graph_rerun(benchmark::State& state, Workload (*make)(int)) {
  namespace flow = oneapi::tbb::flow;
  const Workload& w = graph_workload(make);
  const int threads = static_cast<int>(state.range(0));
  oneapi::tbb::global_control parallelism(oneapi::tbb::global_control::max_allowed_parallelism, threads + 1);
  oneapi::tbb::task_arena arena(threads, 0);
  arena.execute([&] {
    flow::graph g;
    std::vector<flow::continue_node<flow::continue_msg>> nodes;
    nodes.reserve(w.ops.size());
    for (std::size_t i = 0; i < w.ops.size(); ++i) nodes.emplace_back(g, [](const flow::continue_msg&) {});
    for (std::size_t i = 0; i < w.ops.size(); ++i) {
      for (int p : w.predecessors[i]) flow::make_edge(nodes[p], nodes[i]);
    }
    std::vector<std::size_t> roots;
    for (std::size_t i = 0; i < w.ops.size(); ++i) {
      if (w.predecessors[i].empty()) roots.push_back(i);
    }
    measure(state, w.ops.size(), [&] {
      for (std::size_t r : roots) nodes[r].try_put(flow::continue_msg());
      g.wait_for_all();
    });
  });
}

void register_replay() {
  const std::pair<const char*, Workload (*)(int)> workloads[] = {
      {"replay_chain", chain}, {"replay_independent", independent}, {"replay_fan_out_in", fan_out_in},
      {"replay_stencil_1d", stencil_1d}};
  for (const auto& [name, make] : workloads) {
    const std::string prefix(name);
    benchmark::RegisterBenchmark((prefix + "/depengine").c_str(), run_engine_replay, make, EngineKind::Threaded)
        ->Arg(1)->Arg(2)->UseRealTime()->Apply(around_each);
    benchmark::RegisterBenchmark((prefix + "/tbb_flow_graph").c_str(), run_tbb_flow_graph_rerun, make)
        ->Arg(1)->Arg(2)->UseRealTime()->Apply(around_each);
    benchmark::RegisterBenchmark((prefix + "/depengine_eager").c_str(), run_engine_eager, make, EngineKind::Threaded)
        ->Arg(1)->Arg(2)->UseRealTime()->Apply(around_each);
    benchmark::RegisterBenchmark((prefix + "/naive").c_str(), run_engine_eager, make, EngineKind::Naive)
        ->Arg(1)->UseRealTime()->Apply(around_each);
  }
}
