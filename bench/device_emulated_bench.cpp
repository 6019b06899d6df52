// The device benchmarks on the emulated device, where device time is modelled
// by EmulatedDeviceOptions::latency (streams sleep, as a GPU's engines run
// without the host): the same workloads as device_cuda_bench.
//
//   overlap_copy_compute/sync|async   upload, compute, download per batch
//   launch_overhead/depengine|direct  chain of empty ops vs the bare stream
//   multi_stream/one_stream|depengine independent ops on 1 vs 4 streams

#include <benchmark/benchmark.h>

#include <chrono>
#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <memory>
#include <vector>

#include "devices/emulated/emulated_event.h"
#include "devices/emulated/stream_thread.h"

using namespace depengine;

namespace {

constexpr auto kDeviceTime = std::chrono::microseconds(100);

// ns_per_op: Google Benchmark divides by the iteration count and inverts.
void report(benchmark::State& state, double ops_per_iteration) {
  state.counters["ns_per_op"] =
      benchmark::Counter(ops_per_iteration / 1e9, benchmark::Counter::kIsIterationInvariantRate |
                                                      benchmark::Counter::kInvert);
}

void overlap_copy_compute(benchmark::State& state, bool sync) {
  constexpr int kBatches = 16;
  Engine engine;
  add_emulated_device(engine, 0, {.latency = kDeviceTime});
  const Device gpu = Device::emulated(0);
  std::vector<Var> host, dev;
  for (int b = 0; b < kBatches; ++b) {
    host.push_back(engine.new_var());
    dev.push_back(engine.new_var());
  }
  auto step = [&](Var read, Var write, OpProperty property) {
    engine.push([](RunContext&) {}, {read}, {write}, {.device = gpu, .property = property});
    if (sync) engine.wait_to_read(write);
  };
  for (auto _ : state) {
    for (int b = 0; b < kBatches; ++b) {
      step(host[b], dev[b], OpProperty::CopyToDevice);
      engine.push([](RunContext&) {}, {}, {dev[b]}, {.device = gpu});
      if (sync) engine.wait_to_read(dev[b]);
      step(dev[b], host[b], OpProperty::CopyFromDevice);
    }
    engine.wait_all();
  }
  report(state, 3.0 * kBatches);
}

constexpr int kChain = 2000;

void launch_overhead_depengine(benchmark::State& state) {
  Engine engine;
  add_emulated_device(engine, 0);
  Var v = engine.new_var();
  for (auto _ : state) {
    for (int i = 0; i < kChain; ++i) engine.push([](RunContext&) {}, {}, {v}, {.device = Device::emulated(0)});
    engine.wait_to_read(v);
  }
  report(state, kChain);
}

// The same empty work queued on one emulated stream without the engine.
void launch_overhead_direct(benchmark::State& state) {
  detail::StreamThread stream(Device::emulated(0), StreamRole::compute, 0);
  for (auto _ : state) {
    detail::EmulatedEvent done;
    for (int i = 0; i < kChain - 1; ++i) stream.enqueue([] {});
    stream.enqueue([&done] { done.signal(); });
    done.wait();
  }
  report(state, kChain);
}

void multi_stream(benchmark::State& state, int streams) {
  constexpr int kOps = 32;
  Engine engine;
  add_emulated_device(engine, 0, {.compute_streams = streams, .latency = kDeviceTime});
  std::vector<Var> vars;
  for (int i = 0; i < kOps; ++i) vars.push_back(engine.new_var());
  for (auto _ : state) {
    for (Var v : vars) engine.push([](RunContext&) {}, {}, {v}, {.device = Device::emulated(0)});
    engine.wait_all();
  }
  report(state, kOps);
}

BENCHMARK_CAPTURE(overlap_copy_compute, sync, true)->Name("overlap_copy_compute/sync")->UseRealTime();
BENCHMARK_CAPTURE(overlap_copy_compute, async, false)->Name("overlap_copy_compute/async")->UseRealTime();
BENCHMARK(launch_overhead_depengine)->Name("launch_overhead/depengine")->UseRealTime();
BENCHMARK(launch_overhead_direct)->Name("launch_overhead/direct")->UseRealTime();
BENCHMARK_CAPTURE(multi_stream, one_stream, 1)->Name("multi_stream/one_stream")->UseRealTime();
BENCHMARK_CAPTURE(multi_stream, depengine, 4)->Name("multi_stream/depengine")->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
