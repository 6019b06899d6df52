// The CUDA device on a real GPU: results across compute and copy streams,
// ordering of chains that hop streams, launch errors, out-of-memory and
// buffer reuse after deletion. Every test skips on a machine without a GPU.

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <depengine/cuda_memory.h>
#include <depengine/engine.h>
#include <stdexcept>
#include <string>
#include <vector>

#include "devices/cuda/sample_kernels.h"
#include "tests/support/gpu_test.h"

using namespace depengine;

namespace {

using CudaDevice = GpuTest;

TEST_F(CudaDevice, UploadComputeDownloadOverlapsAcrossBatches) {
  Engine engine;
  constexpr std::size_t kN = 1 << 16;
  constexpr int kBatches = 16;
  const std::size_t bytes = kN * sizeof(float);
  std::vector<float*> host(kBatches), dev(kBatches);
  std::vector<Var> vars;
  for (int b = 0; b < kBatches; ++b) {
    host[b] = static_cast<float*>(cuda_pinned_alloc(bytes));
    dev[b] = static_cast<float*>(cuda_alloc(0, bytes));
    for (std::size_t i = 0; i < kN; ++i) host[b][i] = static_cast<float>(b);
    Var h = engine.new_var("host"), d = engine.new_var("dev");
    vars.push_back(h);
    engine.push([=](RunContext& ctx) { cudaMemcpyAsync(dev[b], host[b], bytes, cudaMemcpyHostToDevice, stream_of(ctx)); },
                {h}, {d}, {.name = "upload", .device = kGpu, .property = OpProperty::CopyToDevice});
    engine.push([=](RunContext& ctx) { samples::launch_scale_add(dev[b], kN, 2.0f, 1.0f, stream_of(ctx)); }, {}, {d},
                {.name = "scale_add", .device = kGpu});
    engine.push([=](RunContext& ctx) { cudaMemcpyAsync(host[b], dev[b], bytes, cudaMemcpyDeviceToHost, stream_of(ctx)); },
                {d}, {h}, {.name = "download", .device = kGpu, .property = OpProperty::CopyFromDevice});
  }
  for (int b = 0; b < kBatches; ++b) {
    engine.wait_to_read(vars[b]);
    EXPECT_EQ(host[b][0], 2.0f * b + 1.0f);
    EXPECT_EQ(host[b][kN - 1], 2.0f * b + 1.0f);
  }
  engine.wait_all();
  for (int b = 0; b < kBatches; ++b) {
    cuda_free(0, dev[b], bytes);
    cuda_pinned_free(host[b], bytes);
  }
}

TEST_F(CudaDevice, ChainHoppingStreamsKeepsPushOrder) {
  Engine engine;
  auto* counter = static_cast<std::int64_t*>(cuda_alloc(0, sizeof(std::int64_t)));
  auto* result = static_cast<std::int64_t*>(cuda_pinned_alloc(sizeof(std::int64_t)));
  Var v = engine.new_var("counter"), r = engine.new_var("result");
  engine.push([=](RunContext& ctx) { cudaMemsetAsync(counter, 0, sizeof(std::int64_t), stream_of(ctx)); }, {}, {v},
              {.device = kGpu});
  std::int64_t expected = 0;
  const OpProperty hops[] = {OpProperty::Normal, OpProperty::DeviceToDevice, OpProperty::Normal,
                             OpProperty::CopyToDevice};
  for (int i = 1; i <= 500; ++i) {
    expected = expected * 3 + i;
    // High priority every so often: the chain also hops to the priority stream.
    engine.push([=](RunContext& ctx) { samples::launch_step(counter, i, stream_of(ctx)); }, {}, {v},
                {.priority = i % 7 == 0 ? 1 : 0, .device = kGpu, .property = hops[i % 4]});
  }
  engine.push([=](RunContext& ctx) {
    cudaMemcpyAsync(result, counter, sizeof(std::int64_t), cudaMemcpyDeviceToHost, stream_of(ctx));
  }, {v}, {r}, {.device = kGpu, .property = OpProperty::CopyFromDevice});
  engine.wait_to_read(r);
  EXPECT_EQ(*result, expected);
  engine.delete_var(v, [=] { cuda_free(0, counter, sizeof(std::int64_t)); });
  engine.delete_var(r, [=] { cuda_pinned_free(result, sizeof(std::int64_t)); });
  engine.wait_all();
}

// While the watcher waits for a long kernel, the ops launched behind it share
// one event; each must still complete only after its own work, as the CPU
// ops reading the downloaded values check.
TEST_F(CudaDevice, OpsSharingAnEventCompleteAfterTheirWork) {
  Engine engine;
  auto* counter = static_cast<std::int64_t*>(cuda_alloc(0, sizeof(std::int64_t)));
  constexpr int kDownloads = 20;
  auto* host = static_cast<std::int64_t*>(cuda_pinned_alloc(kDownloads * sizeof(std::int64_t)));
  Var v = engine.new_var("counter"), h = engine.new_var("host");
  engine.push([=](RunContext& ctx) {
    cudaMemsetAsync(counter, 0, sizeof(std::int64_t), stream_of(ctx));
    samples::launch_spin(20'000'000, stream_of(ctx));  // ~10 ms
  }, {}, {v}, {.device = kGpu});
  std::vector<std::int64_t> expected(kDownloads), seen(kDownloads, -1);
  std::int64_t value = 0;
  for (int d = 0; d < kDownloads; ++d) {
    for (int i = 1; i <= 10; ++i) {
      value = value * 3 + i;
      engine.push([=](RunContext& ctx) { samples::launch_step(counter, i, stream_of(ctx)); }, {}, {v},
                  {.device = kGpu});
    }
    expected[d] = value;
    engine.push([=](RunContext& ctx) {
      cudaMemcpyAsync(host + d, counter, sizeof(std::int64_t), cudaMemcpyDeviceToHost, stream_of(ctx));
    }, {v}, {h}, {.device = kGpu, .property = OpProperty::CopyFromDevice});
    engine.push([&seen, host, d](RunContext&) { seen[d] = host[d]; }, {h}, {});
  }
  engine.wait_all();
  EXPECT_EQ(seen, expected);
  engine.delete_var(v, [=] { cuda_free(0, counter, sizeof(std::int64_t)); });
  engine.delete_var(h, [=] { cuda_pinned_free(host, kDownloads * sizeof(std::int64_t)); });
  engine.wait_all();
}

TEST_F(CudaDevice, LaunchFailureNamesTheOperation) {
  Engine engine;
  bool later_ran = false;
  Var x = engine.new_var("x"), y = engine.new_var("y");
  engine.push([](RunContext& ctx) { samples::launch_invalid(stream_of(ctx)); }, {}, {x},
              {.name = "oversized_block", .device = kGpu});
  engine.push([&](RunContext&) { later_ran = true; }, {x}, {y}, {.device = kGpu});
  try {
    engine.wait_to_write(y);
    ADD_FAILURE() << "the launch failure was not reported";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("oversized_block"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(later_ran);
  EXPECT_THROW(engine.wait_to_read(x), std::runtime_error);
  // Not a sticky error: the device keeps working.
  auto* p = static_cast<std::int64_t*>(cuda_alloc(0, sizeof(std::int64_t)));
  engine.push([=](RunContext& ctx) { cudaMemsetAsync(p, 0, sizeof(std::int64_t), stream_of(ctx)); }, {}, {x},
              {.device = kGpu});
  EXPECT_NO_THROW(engine.wait_to_read(x));
  cuda_free(0, p, sizeof(std::int64_t));
}

TEST_F(CudaDevice, OutOfMemoryFailsTheOperationOnly) {
  Engine engine;
  Var x = engine.new_var("x");
  engine.push([](RunContext&) { cuda_alloc(0, std::size_t{1} << 60); }, {}, {x}, {.name = "huge", .device = kGpu});
  EXPECT_THROW(engine.wait_to_read(x), CudaOutOfMemory);
  void* small = nullptr;
  engine.push([&](RunContext&) { small = cuda_alloc(0, 1024); }, {}, {x}, {.device = kGpu});
  engine.wait_to_read(x);
  EXPECT_NE(small, nullptr);
  cuda_free(0, small, 1024);
}

TEST_F(CudaDevice, BufferFreedByDeletionIsReusedSafely) {
  Engine engine;
  constexpr std::size_t kN = 1 << 20;
  const std::size_t bytes = kN * sizeof(float);
  float* first = static_cast<float*>(cuda_alloc(0, bytes));
  Var a = engine.new_var("a");
  for (int i = 0; i < 8; ++i) {
    engine.push([=](RunContext& ctx) {
      samples::launch_spin(200000, stream_of(ctx));
      samples::launch_scale_add(first, kN, 0.0f, 99.0f, stream_of(ctx));
    }, {}, {a}, {.device = kGpu, .property = i % 2 ? OpProperty::DeviceToDevice : OpProperty::Normal});
  }
  // The release runs once the kernels above completed; the cache may then
  // hand the same block to the next allocation.
  engine.delete_var(a, [=] { cuda_free(0, first, bytes); });
  engine.wait_all();
  float* second = static_cast<float*>(cuda_alloc(0, bytes));
  auto* host = static_cast<float*>(cuda_pinned_alloc(bytes));
  Var b = engine.new_var("b");
  engine.push([=](RunContext& ctx) {
    cudaMemsetAsync(second, 0, bytes, stream_of(ctx));
    cudaMemcpyAsync(host, second, bytes, cudaMemcpyDeviceToHost, stream_of(ctx));
  }, {}, {b}, {.device = kGpu});
  engine.wait_to_read(b);
  EXPECT_EQ(host[0], 0.0f);
  EXPECT_EQ(host[kN - 1], 0.0f);
  cuda_free(0, second, bytes);
  cuda_pinned_free(host, bytes);
}

TEST_F(CudaDevice, BadStreamCountInEnvironmentIsRejected) {
  setenv("DEPENGINE_CUDA_COMPUTE_STREAMS", "0", 1);
  Engine engine;
  Var x = engine.new_var("x");
  EXPECT_THROW(engine.push([](RunContext&) {}, {}, {x}, {.device = kGpu}), std::invalid_argument);
  unsetenv("DEPENGINE_CUDA_COMPUTE_STREAMS");
}

}  // namespace
