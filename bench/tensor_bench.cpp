// What the engine costs on top of the math: gemm (GFLOP/s) and an
// elementwise op (GB/s) on the CPU, pushed through depengine versus calling
// OpenBLAS or a plain loop directly. Each iteration waits for its result, so
// the engine's push, scheduling and completion are all inside the time.

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <vector>

#include <depengine/engine.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

namespace {

using depengine::Engine;
using depengine::EngineKind;
using depengine::EngineOptions;
using depengine::Tensor;
namespace ops = depengine::ops;

void report(benchmark::State& state, double flops, double bytes) {
  using benchmark::Counter;
  const double it = static_cast<double>(state.iterations());
  state.counters["GFLOP"] = Counter(flops * it / 1e9, Counter::kIsRate);
  state.counters["GB"] = Counter(bytes * it / 1e9, Counter::kIsRate);
  // Seconds per iteration, in ns: the inverse of a rate of it * 1e-9 per second.
  state.counters["ns_per_op"] = Counter(it * 1e-9, Counter::kIsRate | Counter::kInvert);
}

void gemm_openblas(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  report(state, 2.0 * n * n * n, 3.0 * 4 * n * n);
}

void gemm_engine(benchmark::State& state, EngineKind kind) {
  const std::int64_t n = state.range(0);
  Engine engine(EngineOptions{.kind = kind});
  const Tensor a = Tensor::full(engine, {n, n}, 0.5), b = Tensor::full(engine, {n, n}, 0.25);
  const Tensor c = Tensor::empty(engine, {n, n});
  ops::Cost cost;
  for (auto _ : state) {
    cost = ops::gemm(a, b, c);
    engine.wait_to_read(c.var());
  }
  report(state, cost.flops, cost.bytes);
}

void axpy_plain_loop(benchmark::State& state) {
  const std::int64_t n = state.range(0) * state.range(0);
  std::vector<float> x(n, 0.5f), y(n, 0.0f);
  for (auto _ : state) {
    const float alpha = 1e-3f;
    for (std::int64_t i = 0; i < n; ++i) y[i] = alpha * x[i] + y[i];
    benchmark::DoNotOptimize(y.data());
  }
  report(state, 2.0 * n, 3.0 * 4 * n);
}

void axpy_engine(benchmark::State& state, EngineKind kind) {
  const std::int64_t n = state.range(0);
  Engine engine(EngineOptions{.kind = kind});
  const Tensor x = Tensor::full(engine, {n, n}, 0.5), y = Tensor::zeros(engine, {n, n});
  ops::Cost cost;
  for (auto _ : state) {
    cost = ops::axpy(1e-3, x, y);
    engine.wait_to_read(y.var());
  }
  report(state, cost.flops, cost.bytes);
}

BENCHMARK(gemm_openblas)->Name("gemm/openblas")->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(gemm_engine, depengine, EngineKind::Threaded)
    ->Name("gemm/depengine")->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(gemm_engine, naive, EngineKind::Naive)
    ->Name("gemm/naive")->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(axpy_plain_loop)->Name("axpy/plain_loop")->Arg(512)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(axpy_engine, depengine, EngineKind::Threaded)
    ->Name("axpy/depengine")->Arg(512)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(axpy_engine, naive, EngineKind::Naive)
    ->Name("axpy/naive")->Arg(512)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
