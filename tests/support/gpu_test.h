#pragma once
// GpuTest: the fixture of tests that need a CUDA GPU. Each test skips, saying
// why, on a machine without one; kGpu is the GPU they use and stream_of the
// CUDA stream an op on it was given.

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <depengine/cuda_memory.h>
#include <depengine/device.h>
#include <depengine/run_context.h>

inline constexpr depengine::Device kGpu = depengine::Device::cuda(0);

inline cudaStream_t stream_of(const depengine::RunContext& ctx) { return static_cast<cudaStream_t>(ctx.stream); }

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (depengine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU here (cudaGetDeviceCount reports none)";
  }
};
