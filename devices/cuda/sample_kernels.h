#pragma once
// Small CUDA kernels for the GPU tests, benchmarks and examples
// (library depengine_cuda_sample_kernels; not part of depengine itself).
// Each launches on `stream` and returns at once; launch errors are left for
// cudaGetLastError, as with any kernel launch.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace depengine::samples {

/// data[i] = data[i] * scale + offset for i < n.
void launch_scale_add(float* data, std::size_t n, float scale, float offset, cudaStream_t stream);
/// *counter = *counter * 3 + step: order-sensitive, for chains of tiny kernels.
void launch_step(std::int64_t* counter, std::int64_t step, cudaStream_t stream);
/// One thread busy for about `cycles` GPU clock cycles: compute of a known duration.
void launch_spin(std::int64_t cycles, cudaStream_t stream);
/// A launch with more threads per block than any GPU allows: fails at launch.
void launch_invalid(cudaStream_t stream);

}  // namespace depengine::samples
