// What the engine costs on top of the math: gemm (GFLOP/s) and an
// elementwise op (GB/s) on the CPU, pushed through depengine versus calling
// OpenBLAS or a plain loop directly.
//
// Each iteration times the same number of ops both ways, one after the
// other (which goes first alternates), on the same tensors, so that the
// machine's load drifts alike over both halves and their ratio holds even
// where absolute times do not. Two ways of pushing:
//
// - stream/N: N ops are pushed back to back and waited for once, as a
//   training loop or pipeline does. Each op writes the same output, so each
//   depends on the previous one and they run in order, like the direct calls.
//   A stream pays two wake-ups once (a worker's for its first op, the waiting
//   thread's after its last), tens of microseconds each on a VM: the longer
//   stream shows the cost per op without them, the shorter one with them.
// - wait_each: a wait after every op, so the wake-up of the waiting thread is
//   inside every op's time: the worst case, what a synchronous caller pays.
//
// Counters: `overhead` = engine time / direct time - 1 over the whole run
// (0.02 is 2%), the engine's and the direct calls' rates, `ns_per_op` of the
// engine. The iteration time is the engine half's.

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <functional>

#include <depengine/engine.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

namespace {

using depengine::Engine;
using depengine::EngineKind;
using depengine::EngineOptions;
using depengine::Tensor;
namespace ops = depengine::ops;
using Clock = std::chrono::steady_clock;

constexpr std::int64_t kSide = 512;
// Ops per stream (and per iteration of wait_each): gemm about 10 ms each,
// axpy about 60 us each.
constexpr int kGemmStream = 16;
constexpr int kAxpyShortStream = 64;
constexpr int kAxpyLongStream = 1024;

enum class Waiting { stream, wait_each };

struct Workload {
  std::function<void()> direct;     // one op, called directly
  std::function<ops::Cost()> push;  // the same op, pushed to the engine
  std::function<void()> wait;       // waits for the engine's ops pushed so far
};

// The direct calls run on the very storage of the engine's tensors, while
// the engine is idle (each half ends with a wait), so that both halves see
// the same memory, whatever its alignment and placement.
float* host(const Tensor& t) { return static_cast<float*>(t.data()); }

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void compare(benchmark::State& state, const Workload& w, int count, Waiting waiting) {
  double direct_s = 0, engine_s = 0;
  ops::Cost cost;
  auto direct_half = [&] {
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < count; ++i) w.direct();
    direct_s += seconds_since(start);
  };
  auto engine_half = [&] {
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < count; ++i) {
      cost = w.push();
      if (waiting == Waiting::wait_each) w.wait();
    }
    if (waiting == Waiting::stream) w.wait();
    const double s = seconds_since(start);
    engine_s += s;
    return s;
  };
  // Which half goes first alternates, so that neither always finds the
  // caches as the other left them.
  bool direct_first = true;
  for (auto _ : state) {
    if (direct_first) direct_half();
    state.SetIterationTime(engine_half());
    if (!direct_first) direct_half();
    direct_first = !direct_first;
  }
  const double n_ops = static_cast<double>(state.iterations()) * count;
  state.counters["overhead"] = engine_s / direct_s - 1;
  state.counters["GFLOP_per_s"] = cost.flops * n_ops / engine_s * 1e-9;
  state.counters["direct_GFLOP_per_s"] = cost.flops * n_ops / direct_s * 1e-9;
  state.counters["GB_per_s"] = cost.bytes * n_ops / engine_s * 1e-9;
  state.counters["direct_GB_per_s"] = cost.bytes * n_ops / direct_s * 1e-9;
  state.counters["ns_per_op"] = engine_s / n_ops * 1e9;
}

// c = a b, n x n float32: cblas_sgemm directly against ops::gemm.
void gemm(benchmark::State& state, EngineKind kind, Waiting waiting) {
  const int n = static_cast<int>(kSide);
  Engine engine(EngineOptions{.kind = kind});
  const Tensor ta = Tensor::full(engine, {kSide, kSide}, 0.5), tb = Tensor::full(engine, {kSide, kSide}, 0.25);
  const Tensor tc = Tensor::empty(engine, {kSide, kSide});
  engine.wait_all();
  const Workload w{
      [n, a = host(ta), b = host(tb), c = host(tc)] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        benchmark::DoNotOptimize(c);
      },
      [&] { return ops::gemm(ta, tb, tc); },
      [&] { engine.wait_to_read(tc.var()); }};
  compare(state, w, static_cast<int>(state.range(0)), waiting);
}

// y = alpha x + y on n x n float32: a plain loop against ops::axpy.
void axpy(benchmark::State& state, EngineKind kind, Waiting waiting) {
  const std::int64_t n = kSide * kSide;
  Engine engine(EngineOptions{.kind = kind});
  const Tensor tx = Tensor::full(engine, {kSide, kSide}, 0.5), ty = Tensor::zeros(engine, {kSide, kSide});
  engine.wait_all();
  const float alpha = 1e-3f;
  const Workload w{
      // Everything the loop reads is captured by value: through references
      // the compiler must assume a store to y[i] may change alpha or the
      // pointers, and reload or check them.
      [alpha, x = host(tx), y = host(ty), n] {
        for (std::int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
        benchmark::DoNotOptimize(y);
      },
      [&] { return ops::axpy(alpha, tx, ty); },
      [&] { engine.wait_to_read(ty.var()); }};
  compare(state, w, static_cast<int>(state.range(0)), waiting);
}

// Two independent n x n GEMMs pushed together against the same two pushed
// one after the other (each waited for before the next), on the default
// engine: with a worker per core, each GEMM's BLAS threads are its share of
// the cores (ops/cpu/blas_threads.h), so the pair should take the time of
// one. `speedup` = one-after-the-other time / together time; the iteration
// time is the together half's.
void gemm_pair(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  Engine engine(EngineOptions{});
  const Tensor a = Tensor::full(engine, {n, n}, 0.5), b = Tensor::full(engine, {n, n}, 0.25);
  const Tensor c1 = Tensor::empty(engine, {n, n}), c2 = Tensor::empty(engine, {n, n});
  engine.wait_all();
  double together_s = 0, in_turn_s = 0;
  bool together_first = true;
  auto together = [&] {
    const Clock::time_point start = Clock::now();
    ops::gemm(a, b, c1);
    ops::gemm(a, b, c2);
    engine.wait_all();
    const double s = seconds_since(start);
    together_s += s;
    return s;
  };
  auto in_turn = [&] {
    const Clock::time_point start = Clock::now();
    ops::gemm(a, b, c1);
    engine.wait_to_read(c1.var());
    ops::gemm(a, b, c2);
    engine.wait_to_read(c2.var());
    in_turn_s += seconds_since(start);
  };
  for (auto _ : state) {
    if (!together_first) in_turn();
    state.SetIterationTime(together());
    if (together_first) in_turn();
    together_first = !together_first;
  }
  state.counters["speedup"] = in_turn_s / together_s;
  state.counters["workers"] = engine.cpu_threads();
}
BENCHMARK(gemm_pair)->Name("gemm_pair/depengine")->Unit(benchmark::kMillisecond)->UseManualTime()->Arg(1024);

// The naive engine runs each op inside push, so it has no wait_each variant:
// its stream is the cost of pushing alone. The argument is the ops per
// iteration (per stream).
#define TENSOR_BENCH(op, unit, wait_each_ops, ...)                                                 \
  BENCHMARK_CAPTURE(op, stream_depengine, EngineKind::Threaded, Waiting::stream)                  \
      ->Name(#op "/stream/depengine")->Unit(unit)->UseManualTime()->ArgsProduct({{__VA_ARGS__}}); \
  BENCHMARK_CAPTURE(op, stream_naive, EngineKind::Naive, Waiting::stream)                         \
      ->Name(#op "/stream/naive")->Unit(unit)->UseManualTime()->ArgsProduct({{__VA_ARGS__}});     \
  BENCHMARK_CAPTURE(op, wait_each_depengine, EngineKind::Threaded, Waiting::wait_each)            \
      ->Name(#op "/wait_each/depengine")->Unit(unit)->UseManualTime()->Arg(wait_each_ops)

TENSOR_BENCH(gemm, benchmark::kMillisecond, kGemmStream, kGemmStream);
TENSOR_BENCH(axpy, benchmark::kMillisecond, kAxpyShortStream, kAxpyShortStream, kAxpyLongStream);

}  // namespace

BENCHMARK_MAIN();
