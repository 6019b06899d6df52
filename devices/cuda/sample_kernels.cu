#include "devices/cuda/sample_kernels.h"

namespace depengine::samples {
namespace {

__global__ void scale_add(float* data, std::size_t n, float scale, float offset) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) data[i] = data[i] * scale + offset;
}

__global__ void step(std::int64_t* counter, std::int64_t value) { *counter = *counter * 3 + value; }

__global__ void spin(std::int64_t cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

void launch_scale_add(float* data, std::size_t n, float scale, float offset, cudaStream_t stream) {
  constexpr unsigned kBlock = 256;
  const auto blocks = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  if (blocks > 0) scale_add<<<blocks, kBlock, 0, stream>>>(data, n, scale, offset);
}

void launch_step(std::int64_t* counter, std::int64_t value, cudaStream_t stream) {
  step<<<1, 1, 0, stream>>>(counter, value);
}

void launch_spin(std::int64_t cycles, cudaStream_t stream) { spin<<<1, 1, 0, stream>>>(cycles); }

void launch_invalid(cudaStream_t stream) { spin<<<1, 4096, 0, stream>>>(0); }

}  // namespace depengine::samples
