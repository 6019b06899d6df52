// Graph replays on a real GPU, as CUDA graphs (devices/cuda/cuda_graph_replay.h):
// replay equals eager, node functions called once while recorded, several
// streams' worth of independent nodes, copies, kernels and cuBLAS in one
// graph, nodes CUDA refuses to record, failed inputs, and the switch that
// turns CUDA graphs off. Every test skips on a machine without a GPU.

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include <depengine/cuda_memory.h>
#include <depengine/engine.h>
#include <depengine/graph.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "devices/cuda/sample_kernels.h"
#include "tests/support/gpu_test.h"

using namespace depengine;

namespace {

using CudaGraphs = GpuTest;

// A counter on the GPU, and a pinned word to read it back into.
struct Counter {
  explicit Counter(Engine& engine)
      : value(static_cast<std::int64_t*>(cuda_alloc(0, sizeof(std::int64_t)))),
        host(static_cast<std::int64_t*>(cuda_pinned_alloc(sizeof(std::int64_t)))),
        var(engine.new_var("counter")) {
    engine.push([p = value](RunContext& ctx) { cudaMemsetAsync(p, 0, sizeof(std::int64_t), stream_of(ctx)); }, {},
                {var}, {.device = kGpu});
  }
  void push_steps(Engine& engine, int first, int last, std::atomic<int>* calls = nullptr) const {
    for (int i = first; i <= last; ++i) {
      engine.push([p = value, i, calls](RunContext& ctx) {
        if (calls) ++*calls;
        samples::launch_step(p, i, stream_of(ctx));
      }, {}, {var}, {.device = kGpu});
    }
  }
  std::int64_t read(Engine& engine) const {
    const Var h = engine.new_var("host");
    engine.push([p = value, out = host](RunContext& ctx) {
      cudaMemcpyAsync(out, p, sizeof(std::int64_t), cudaMemcpyDeviceToHost, stream_of(ctx));
    }, {var}, {h}, {.device = kGpu, .property = OpProperty::CopyFromDevice});
    engine.wait_to_read(h);
    engine.delete_var(h);
    return *host;
  }
  void free(Engine& engine) const {
    engine.delete_var(var, [p = value, out = host] {
      cuda_free(0, p, sizeof(std::int64_t));
      cuda_pinned_free(out, sizeof(std::int64_t));
    });
  }
  std::int64_t* value;
  std::int64_t* host;
  Var var;
};

std::int64_t steps(std::int64_t from, int first, int last) {
  for (int i = first; i <= last; ++i) from = from * 3 + i;
  return from;
}

TEST_F(CudaGraphs, AReplayEqualsTheEagerPushesAndCallsTheFunctionsOnlyWhileRecorded) {
  Engine engine;
  Counter counter(engine);
  std::atomic<int> calls{0};
  Graph g = engine.capture([&] { counter.push_steps(engine, 1, 100, &calls); });
  std::int64_t expected = 0;
  for (int r = 0; r < 5; ++r) {
    engine.replay(g);
    expected = steps(expected, 1, 100);
  }
  counter.push_steps(engine, 101, 110);  // eager pushes after the replays follow them
  expected = steps(expected, 101, 110);
  EXPECT_EQ(counter.read(engine), expected);
  EXPECT_EQ(calls.load(), 100);
  counter.free(engine);
  engine.wait_all();
}

TEST_F(CudaGraphs, IndependentChainsAndTheirJoinKeepTheirOrder) {
  Engine engine;
  Counter a(engine), b(engine);
  auto* both = static_cast<std::int64_t*>(cuda_pinned_alloc(2 * sizeof(std::int64_t)));
  const Var out = engine.new_var("both");
  Graph g = engine.capture([&] {
    for (int i = 1; i <= 20; ++i) {
      a.push_steps(engine, i, i);
      b.push_steps(engine, 100 + i, 100 + i);
    }
    engine.push([&](RunContext& ctx) {
      cudaMemcpyAsync(both, a.value, sizeof(std::int64_t), cudaMemcpyDeviceToHost, stream_of(ctx));
      cudaMemcpyAsync(both + 1, b.value, sizeof(std::int64_t), cudaMemcpyDeviceToHost, stream_of(ctx));
    }, {a.var, b.var}, {out}, {.device = kGpu, .property = OpProperty::CopyFromDevice});
  });
  std::int64_t ea = 0, eb = 0;
  for (int r = 0; r < 3; ++r) {
    engine.replay(g);
    ea = steps(ea, 1, 20);
    eb = steps(eb, 101, 120);
    engine.wait_to_read(out);
    EXPECT_EQ(both[0], ea) << "replay " << r;
    EXPECT_EQ(both[1], eb) << "replay " << r;
  }
  a.free(engine);
  b.free(engine);
  engine.delete_var(out, [both] { cuda_pinned_free(both, 2 * sizeof(std::int64_t)); });
  engine.wait_all();
}

TEST_F(CudaGraphs, ACopyAKernelAndACublasGemmReplayAsEager) {
  Engine engine;
  constexpr std::int64_t kN = 64;
  std::vector<float> host_a(kN * kN), host_b(kN * kN);
  for (std::int64_t i = 0; i < kN * kN; ++i) {
    host_a[i] = static_cast<float>(i % 7) - 3.0f;
    host_b[i] = static_cast<float>(i % 5) * 0.5f;
  }
  const Tensor a = Tensor::from_host(engine, host_a, {kN, kN}, kGpu);
  const Tensor b = Tensor::from_host(engine, host_b, {kN, kN}, kGpu);
  // A device-to-device copy, a cuBLAS GEMM, element-wise kernels.
  auto run_step = [&](const Tensor& a2, const Tensor& c, const Tensor& d) {
    ops::copy(a, a2);
    ops::gemm(a2, b, c);
    ops::relu(c, d);
    ops::axpy(0.5, c, d);
  };
  auto make = [&] { return Tensor::zeros(engine, {kN, kN}, DType::float32, kGpu); };
  const Tensor a2_eager = make(), c_eager = make(), d_eager = make();
  const Tensor a2 = make(), c = make(), d = make();
  run_step(a2_eager, c_eager, d_eager);  // also makes the cuBLAS handle before anything is recorded
  Graph g = engine.capture([&] { run_step(a2, c, d); });
  for (int r = 0; r < 3; ++r) engine.replay(g);
  EXPECT_EQ(d.to_host<float>(), d_eager.to_host<float>());
  EXPECT_EQ(c.to_host<float>(), c_eager.to_host<float>());
}

// cudaStreamSynchronize may not be recorded: the node runs through its
// function at every replay (after the first few, which record again), and
// the replays stay right.
TEST_F(CudaGraphs, ANodeCudaRefusesToRecordRunsThroughItsFunction) {
  Engine engine;
  Counter counter(engine);
  std::atomic<int> syncing_calls{0};
  Graph g = engine.capture([&] {
    counter.push_steps(engine, 1, 10);
    engine.push([&, p = counter.value](RunContext& ctx) {
      ++syncing_calls;
      samples::launch_step(p, 11, stream_of(ctx));
      if (cudaStreamSynchronize(stream_of(ctx)) != cudaSuccess) throw std::runtime_error("refused");
    }, {}, {counter.var}, {.device = kGpu});
    counter.push_steps(engine, 12, 20);
  });
  std::int64_t expected = 0;
  constexpr int kReplays = 8;
  for (int r = 0; r < kReplays; ++r) {
    engine.replay(g);
    expected = steps(expected, 1, 20);
  }
  EXPECT_EQ(counter.read(engine), expected);
  EXPECT_GE(syncing_calls.load(), kReplays);
  EXPECT_LE(syncing_calls.load(), 2 * kReplays);
  counter.free(engine);
  engine.wait_all();
}

TEST_F(CudaGraphs, NodesWhoseInputFailedAreSkippedAndTheOthersRun) {
  Engine engine;
  Counter counter(engine);
  const Var in = engine.new_var("in"), touched = engine.new_var("touched");
  std::atomic<int> reader_calls{0};
  Graph g = engine.capture([&] {
    engine.push([&](RunContext&) { ++reader_calls; }, {in}, {touched}, {.device = kGpu});
    counter.push_steps(engine, 1, 5);
  });
  engine.replay(g);
  engine.wait_all();
  engine.push([](RunContext& ctx) { samples::launch_invalid(stream_of(ctx)); }, {}, {in}, {.device = kGpu});
  engine.replay(g);
  EXPECT_THROW(engine.wait_to_read(touched), std::runtime_error);
  EXPECT_EQ(counter.read(engine), steps(steps(0, 1, 5), 1, 5));
  EXPECT_EQ(reader_calls.load(), 1);  // recorded once; skipped in the failed replay
  EXPECT_THROW(engine.wait_to_read(in), std::runtime_error);
  counter.free(engine);
  engine.wait_all();
}

TEST_F(CudaGraphs, TurnedOffTheFunctionsRunAtEveryReplay) {
  setenv("DEPENGINE_CUDA_GRAPHS", "0", 1);
  {
    Engine engine;
    Counter counter(engine);
    std::atomic<int> calls{0};
    Graph g = engine.capture([&] { counter.push_steps(engine, 1, 10, &calls); });
    for (int r = 0; r < 3; ++r) engine.replay(g);
    EXPECT_EQ(counter.read(engine), steps(steps(steps(0, 1, 10), 1, 10), 1, 10));
    EXPECT_EQ(calls.load(), 30);
    counter.free(engine);
    engine.wait_all();
  }
  unsetenv("DEPENGINE_CUDA_GRAPHS");
}

TEST_F(CudaGraphs, AGraphDestroyedWithReplaysInFlight) {
  Engine engine;
  Counter counter(engine);
  {
    Graph g = engine.capture([&] {
      engine.push([](RunContext& ctx) { samples::launch_spin(2'000'000, stream_of(ctx)); }, {},
                  {counter.var}, {.device = kGpu});
      counter.push_steps(engine, 1, 3);
    });
    for (int r = 0; r < 4; ++r) engine.replay(g);
  }
  std::int64_t expected = 0;
  for (int r = 0; r < 4; ++r) expected = steps(expected, 1, 3);
  EXPECT_EQ(counter.read(engine), expected);
  counter.free(engine);
  engine.wait_all();
}

}  // namespace
