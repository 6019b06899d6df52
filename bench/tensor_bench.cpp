// What the engine costs on top of the math: gemm (GFLOP/s) and an
// elementwise op (GB/s) on the CPU, pushed through depengine versus calling
// OpenBLAS or a plain loop directly.
//
// Each iteration times the same number of ops both ways, one after the
// other, so that the machine's load drifts alike over both halves and their
// ratio holds even where absolute times do not. Two ways of pushing:
//
// - stream: the ops are pushed back to back and waited for once, as a
//   training loop or pipeline does. Each op writes the same output, so each
//   depends on the previous one and they run in order, like the direct calls.
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
using Clock = std::chrono::steady_clock;

constexpr std::int64_t kSide = 512;
constexpr int kGemmsPerIteration = 16;        // about 10 ms each
constexpr int kElementwisePerIteration = 64;  // about 100 us each

enum class Waiting { stream, wait_each };

struct Workload {
  std::function<void()> direct;     // one op, called directly
  std::function<ops::Cost()> push;  // the same op, pushed to the engine
  std::function<void()> wait;       // waits for the engine's ops pushed so far
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void compare(benchmark::State& state, const Workload& w, int count, Waiting waiting) {
  double direct_s = 0, engine_s = 0;
  ops::Cost cost;
  for (auto _ : state) {
    const Clock::time_point direct_start = Clock::now();
    for (int i = 0; i < count; ++i) w.direct();
    direct_s += seconds_since(direct_start);

    const Clock::time_point engine_start = Clock::now();
    for (int i = 0; i < count; ++i) {
      cost = w.push();
      if (waiting == Waiting::wait_each) w.wait();
    }
    if (waiting == Waiting::stream) w.wait();
    const double s = seconds_since(engine_start);
    engine_s += s;
    state.SetIterationTime(s);
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
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  Engine engine(EngineOptions{.kind = kind});
  const Tensor ta = Tensor::full(engine, {kSide, kSide}, 0.5), tb = Tensor::full(engine, {kSide, kSide}, 0.25);
  const Tensor tc = Tensor::empty(engine, {kSide, kSide});
  engine.wait_all();
  const Workload w{
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                    c.data(), n);
        benchmark::DoNotOptimize(c.data());
      },
      [&] { return ops::gemm(ta, tb, tc); },
      [&] { engine.wait_to_read(tc.var()); }};
  compare(state, w, kGemmsPerIteration, waiting);
}

// y = alpha x + y on n x n float32: a plain loop against ops::axpy.
void axpy(benchmark::State& state, EngineKind kind, Waiting waiting) {
  const std::int64_t n = kSide * kSide;
  std::vector<float> x(n, 0.5f), y(n, 0.0f);
  Engine engine(EngineOptions{.kind = kind});
  const Tensor tx = Tensor::full(engine, {kSide, kSide}, 0.5), ty = Tensor::zeros(engine, {kSide, kSide});
  engine.wait_all();
  const float alpha = 1e-3f;
  const Workload w{
      [&] {
        for (std::int64_t i = 0; i < n; ++i) y[i] = alpha * x[i] + y[i];
        benchmark::DoNotOptimize(y.data());
      },
      [&] { return ops::axpy(alpha, tx, ty); },
      [&] { engine.wait_to_read(ty.var()); }};
  compare(state, w, kElementwisePerIteration, waiting);
}

// The naive engine runs each op inside push, so it has no wait_each variant:
// its stream is the cost of pushing alone.
#define TENSOR_BENCH(op, unit)                                                         \
  BENCHMARK_CAPTURE(op, stream_depengine, EngineKind::Threaded, Waiting::stream)       \
      ->Name(#op "/stream/depengine")->Unit(unit)->UseManualTime();                    \
  BENCHMARK_CAPTURE(op, stream_naive, EngineKind::Naive, Waiting::stream)              \
      ->Name(#op "/stream/naive")->Unit(unit)->UseManualTime();                        \
  BENCHMARK_CAPTURE(op, wait_each_depengine, EngineKind::Threaded, Waiting::wait_each) \
      ->Name(#op "/wait_each/depengine")->Unit(unit)->UseManualTime()

TENSOR_BENCH(gemm, benchmark::kMillisecond);
TENSOR_BENCH(axpy, benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
