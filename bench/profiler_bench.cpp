// What recording costs per operation: the same empty ops pushed with no
// profiler, and with a profiler started. The difference of the two
// `ns_per_op` counters, in one run, is the recording cost.
//
// Names are recording/<profiler>/<threads>: `off` attaches nothing, `on`
// starts a Profiler before the ops and stops it after the wait. Each
// iteration pushes kOpsPerIteration empty ops alternating between two
// variables (two chains, so both workers have work), then waits for all.
// The recording is cleared between iterations, outside the timed part, so
// memory stays bounded and every iteration records into the same state.

#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include <depengine/engine.h>
#include <depengine/profiler.h>

namespace {

constexpr int kOpsPerIteration = 20000;

void run(benchmark::State& state, bool profile) {
  const int threads = static_cast<int>(state.range(0));
  depengine::Engine engine({.cpu_threads = threads, .read_environment = false});
  depengine::Profiler profiler(engine);
  const depengine::Var vars[2] = {engine.new_var("a"), engine.new_var("b")};
  double total_ns = 0;
  std::size_t total_ops = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    if (profile) profiler.start();
    for (int i = 0; i < kOpsPerIteration; ++i) {
      engine.push([](depengine::RunContext&) {}, {}, {vars[i % 2]}, {.name = "empty"});
    }
    engine.wait_all();
    if (profile) profiler.stop();
    total_ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    total_ops += kOpsPerIteration;
    state.PauseTiming();
    profiler.clear();
    state.ResumeTiming();
  }
  state.counters["ns_per_op"] = total_ns / static_cast<double>(total_ops);
}

}  // namespace

int main(int argc, char** argv) {
  for (const bool profile : {false, true}) {
    if (profile && !depengine::Profiler::available()) continue;  // built with DEPENGINE_PROFILER_HOOKS=OFF
    benchmark::RegisterBenchmark(profile ? "recording/on" : "recording/off", run, profile)
        ->Arg(1)->Arg(2)->UseRealTime();
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
