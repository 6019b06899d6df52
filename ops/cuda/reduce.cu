// Reduction kernels: one block per output element sums its slice in double
// (like the CPU backend), then a shared-memory tree combines the threads.

#include "ops/cuda/kernels.h"

namespace depengine::ops::detail::cuda {
namespace {

constexpr int kThreads = 256;

// The sum of `value` over the block, valid in thread 0.
__device__ double block_sum(double value) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) partial[threadIdx.x] += partial[threadIdx.x + step];
    __syncthreads();
  }
  return partial[0];
}

// x seen as [outer, len, inner]; block b computes out[b] = out[o, i].
template <class T>
__global__ void reduce_sum_kernel(const T* x, std::int64_t len, std::int64_t inner, double scale, T* out) {
  const std::int64_t o = blockIdx.x / inner, i = blockIdx.x % inner;
  double acc = 0;
  for (std::int64_t j = threadIdx.x; j < len; j += kThreads) acc += x[(o * len + j) * inner + i];
  const double total = block_sum(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<T>(scale * total);
}

}  // namespace

void launch_reduce_sum(DType t, const void* x, std::int64_t outer, std::int64_t len, std::int64_t inner,
                       double scale, void* out, cudaStream_t s) {
  const std::int64_t outputs = outer * inner;
  if (outputs == 0) return;
  if (t == DType::float64) {
    reduce_sum_kernel<<<static_cast<unsigned>(outputs), kThreads, 0, s>>>(static_cast<const double*>(x), len, inner, scale,
                                                   static_cast<double*>(out));
  } else {
    reduce_sum_kernel<<<static_cast<unsigned>(outputs), kThreads, 0, s>>>(static_cast<const float*>(x), len, inner, scale,
                                                   static_cast<float*>(out));
  }
  check_launch("reduce_sum");
}

}  // namespace depengine::ops::detail::cuda
