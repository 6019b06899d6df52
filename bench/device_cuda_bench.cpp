// The device benchmarks on GPU 0 (each skips without a GPU):
//
//   overlap_copy_compute/sync|async   per batch: upload (pinned memory), a
//                                     kernel as long as the copy, download
//   launch_overhead/depengine|direct  chain of tiny kernels through the engine
//                                     vs launched in a loop on one stream
//   launch_overhead/empty             the same chain through the engine with
//                                     no kernel: the engine's own cost
//   launch_overhead/direct_events     the direct loop recording an event
//                                     behind each kernel, as the engine does
//                                     to learn of each op's completion
//   multi_stream/one_stream|depengine independent small kernels on one stream
//                                     vs spread by the engine over its streams
//   replay_chain/eager|cuda_graph     a chain of 1,000 tiny kernels pushed op by
//                                     op vs captured once and replayed (CUDA
//                                     graphs)
//   replay_chain/cuda_graph_cpu       the pushing thread's CPU time in replay()
//                                     (manual time; ns_per_op is per replay)
//
// Targets: async >= 1.8x faster than sync; depengine <= 1.3x direct (issue 3);
// cuda_graph >= 3x faster than eager in wall time, <= 10 us + 50 ns per node
// of CPU time per replay (issue 22).

#include <benchmark/benchmark.h>

#include <cuda_runtime_api.h>

#include <time.h>

#include <cstdint>
#include <depengine/cuda_memory.h>
#include <depengine/engine.h>
#include <depengine/graph.h>
#include <vector>

#include "devices/cuda/sample_kernels.h"

using namespace depengine;

namespace {

constexpr Device kGpu = Device::cuda(0);

cudaStream_t stream_of(const RunContext& ctx) { return static_cast<cudaStream_t>(ctx.stream); }

void report(benchmark::State& state, double ops_per_iteration) {
  state.counters["ns_per_op"] =
      benchmark::Counter(ops_per_iteration / 1e9, benchmark::Counter::kIsIterationInvariantRate |
                                                      benchmark::Counter::kInvert);
}

bool skip_without_gpu(benchmark::State& state) {
  if (cuda_device_count() > 0) return false;
  state.SkipWithError("no CUDA GPU");
  return true;
}

float elapsed_ms(cudaStream_t stream, auto&& work) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, stream);
  work();
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}

// Spin cycles that take as long as one upload of `bytes`: copy and compute
// then weigh the same, and overlap can at best halve the time.
std::int64_t cycles_matching_copy(void* dev, const void* host, std::size_t bytes) {
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  constexpr std::int64_t kProbe = 1'000'000;
  samples::launch_spin(kProbe, stream);  // warm up
  const float copy = elapsed_ms(stream, [&] { cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream); });
  const float spin = elapsed_ms(stream, [&] { samples::launch_spin(kProbe, stream); });
  cudaStreamDestroy(stream);
  return static_cast<std::int64_t>(kProbe * (copy / spin));
}

void overlap_copy_compute(benchmark::State& state, bool sync) {
  if (skip_without_gpu(state)) return;
  constexpr int kBatches = 16;
  constexpr std::size_t kBytes = std::size_t{8} << 20;
  Engine engine;
  std::vector<void*> host(kBatches), dev(kBatches);
  std::vector<Var> host_vars, dev_vars;
  for (int b = 0; b < kBatches; ++b) {
    host[b] = cuda_pinned_alloc(kBytes);
    dev[b] = cuda_alloc(0, kBytes);
    host_vars.push_back(engine.new_var());
    dev_vars.push_back(engine.new_var());
  }
  const std::int64_t cycles = cycles_matching_copy(dev[0], host[0], kBytes);
  auto push = [&](auto fn, Var read, Var write, OpProperty property) {
    if (read.is_null()) {
      engine.push(fn, {}, {write}, {.device = kGpu, .property = property});
    } else {
      engine.push(fn, {read}, {write}, {.device = kGpu, .property = property});
    }
    if (sync) engine.wait_to_read(write);
  };
  for (auto _ : state) {
    for (int b = 0; b < kBatches; ++b) {
      void* h = host[b];
      void* d = dev[b];
      push([=](RunContext& ctx) { cudaMemcpyAsync(d, h, kBytes, cudaMemcpyHostToDevice, stream_of(ctx)); },
           host_vars[b], dev_vars[b], OpProperty::CopyToDevice);
      push([=](RunContext& ctx) { samples::launch_spin(cycles, stream_of(ctx)); }, Var{}, dev_vars[b],
           OpProperty::Normal);
      push([=](RunContext& ctx) { cudaMemcpyAsync(h, d, kBytes, cudaMemcpyDeviceToHost, stream_of(ctx)); },
           dev_vars[b], host_vars[b], OpProperty::CopyFromDevice);
    }
    engine.wait_all();
  }
  report(state, 3.0 * kBatches);
  for (int b = 0; b < kBatches; ++b) {
    cuda_pinned_free(host[b], kBytes);
    cuda_free(0, dev[b], kBytes);
  }
}

constexpr int kChain = 2000;

void launch_overhead_depengine(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  Engine engine;
  auto* counter = static_cast<std::int64_t*>(cuda_alloc(0, sizeof(std::int64_t)));
  Var v = engine.new_var();
  for (auto _ : state) {
    for (int i = 0; i < kChain; ++i) {
      engine.push([=](RunContext& ctx) { samples::launch_step(counter, i, stream_of(ctx)); }, {}, {v},
                  {.device = kGpu});
    }
    engine.wait_to_read(v);
  }
  report(state, kChain);
  cuda_free(0, counter, sizeof(std::int64_t));
}

void launch_overhead_empty(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  Engine engine;
  Var v = engine.new_var();
  for (auto _ : state) {
    for (int i = 0; i < kChain; ++i) engine.push([](RunContext&) {}, {}, {v}, {.device = kGpu});
    engine.wait_to_read(v);
  }
  report(state, kChain);
}

// The same chain launched in a loop on one stream; with `record_events`, an
// event recorded behind each kernel: the floor of an engine that tracks each
// op's completion with an event.
void launch_overhead_direct(benchmark::State& state, bool record_events) {
  if (skip_without_gpu(state)) return;
  auto* counter = static_cast<std::int64_t*>(cuda_alloc(0, sizeof(std::int64_t)));
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  std::vector<cudaEvent_t> events(record_events ? 64 : 0);
  for (cudaEvent_t& e : events) cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync);
  for (auto _ : state) {
    for (int i = 0; i < kChain; ++i) {
      samples::launch_step(counter, i, stream);
      if (record_events) cudaEventRecord(events[i % events.size()], stream);
    }
    cudaStreamSynchronize(stream);
  }
  report(state, kChain);
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  cudaStreamDestroy(stream);
  cuda_free(0, counter, sizeof(std::int64_t));
}

constexpr int kKernels = 64;
constexpr std::int64_t kSmallKernelCycles = 20'000;  // about 10-20 us

void multi_stream_one_stream(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  for (auto _ : state) {
    for (int i = 0; i < kKernels; ++i) samples::launch_spin(kSmallKernelCycles, stream);
    cudaStreamSynchronize(stream);
  }
  report(state, kKernels);
  cudaStreamDestroy(stream);
}

void multi_stream_depengine(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  Engine engine;
  std::vector<Var> vars;
  for (int i = 0; i < kKernels; ++i) vars.push_back(engine.new_var());
  for (auto _ : state) {
    for (Var v : vars) {
      engine.push([](RunContext& ctx) { samples::launch_spin(kSmallKernelCycles, stream_of(ctx)); }, {}, {v},
                  {.device = kGpu});
    }
    engine.wait_all();
  }
  report(state, kKernels);
}

constexpr int kReplayChain = 1000;

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void push_chain(Engine& engine, std::int64_t* counter, Var v) {
  for (int i = 0; i < kReplayChain; ++i) {
    engine.push([=](RunContext& ctx) { samples::launch_step(counter, i, stream_of(ctx)); }, {}, {v},
                {.device = kGpu});
  }
}

enum class ChainRun { eager, graph, graph_cpu };

void replay_chain(benchmark::State& state, ChainRun run) {
  if (skip_without_gpu(state)) return;
  Engine engine;
  auto* counter = static_cast<std::int64_t*>(cuda_alloc(0, sizeof(std::int64_t)));
  Var v = engine.new_var();
  Graph graph = engine.capture([&] { push_chain(engine, counter, v); });
  engine.replay(graph);  // recorded here, outside the measurement
  engine.wait_to_read(v);
  for (auto _ : state) {
    if (run == ChainRun::eager) {
      push_chain(engine, counter, v);
    } else {
      // The previous replay has completed: this one is launched inside replay().
      const double start = thread_cpu_seconds();
      engine.replay(graph);
      if (run == ChainRun::graph_cpu) state.SetIterationTime(thread_cpu_seconds() - start);
    }
    engine.wait_to_read(v);
  }
  report(state, run == ChainRun::graph_cpu ? 1 : kReplayChain);
  engine.wait_all();
  cuda_free(0, counter, sizeof(std::int64_t));
}

BENCHMARK_CAPTURE(overlap_copy_compute, sync, true)->Name("overlap_copy_compute/sync")->UseRealTime();
BENCHMARK_CAPTURE(overlap_copy_compute, async, false)->Name("overlap_copy_compute/async")->UseRealTime();
BENCHMARK(launch_overhead_depengine)->Name("launch_overhead/depengine")->UseRealTime();
BENCHMARK_CAPTURE(launch_overhead_direct, plain, false)->Name("launch_overhead/direct")->UseRealTime();
BENCHMARK(launch_overhead_empty)->Name("launch_overhead/empty")->UseRealTime();
BENCHMARK_CAPTURE(launch_overhead_direct, events, true)->Name("launch_overhead/direct_events")->UseRealTime();
BENCHMARK(multi_stream_one_stream)->Name("multi_stream/one_stream")->UseRealTime();
BENCHMARK(multi_stream_depengine)->Name("multi_stream/depengine")->UseRealTime();
BENCHMARK_CAPTURE(replay_chain, eager, ChainRun::eager)->Name("replay_chain/eager")->UseRealTime();
BENCHMARK_CAPTURE(replay_chain, cuda_graph, ChainRun::graph)->Name("replay_chain/cuda_graph")->UseRealTime();
BENCHMARK_CAPTURE(replay_chain, cuda_graph_cpu, ChainRun::graph_cpu)
    ->Name("replay_chain/cuda_graph_cpu")
    ->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
