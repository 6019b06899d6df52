// softmax_cross_entropy on CUDA: one block; each thread takes rows in turn
// (rows are independent), then the block sums the row losses in a fixed
// order, so the loss is deterministic. Meant for classifier heads (few
// classes), not for vocabulary-sized softmaxes.

#include <cmath>

#include "ops/cuda/kernels.h"

namespace depengine::ops::detail::cuda {
namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void softmax_xent_kernel(const T* z, const std::int32_t* labels, std::int64_t rows,
                                    std::int64_t classes, T* loss, T* grad) {
  __shared__ double partial[kThreads];
  double acc = 0;
  for (std::int64_t r = threadIdx.x; r < rows; r += kThreads) {
    const T* row = z + r * classes;
    const std::int32_t label = labels[r];
    if (label < 0 || label >= classes) {
      acc = nan("");  // a bad label makes the loss NaN (kernels cannot throw)
      continue;
    }
    double mx = row[0];
    for (std::int64_t c = 1; c < classes; ++c) mx = fmax(mx, static_cast<double>(row[c]));
    double denom = 0;
    for (std::int64_t c = 0; c < classes; ++c) denom += exp(row[c] - mx);
    const double log_denom = log(denom);
    acc += log_denom - (row[label] - mx);
    if (grad) {
      for (std::int64_t c = 0; c < classes; ++c) {
        const double p = exp(row[c] - mx - log_denom);
        grad[r * classes + c] = static_cast<T>((p - (c == label ? 1.0 : 0.0)) / rows);
      }
    }
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) partial[threadIdx.x] += partial[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss[0] = static_cast<T>(rows ? partial[0] / rows : 0.0);
}

}  // namespace

void launch_softmax_cross_entropy(DType t, const void* logits, const std::int32_t* labels, std::int64_t rows,
                                  std::int64_t classes, void* loss, void* grad, cudaStream_t s) {
  if (t == DType::float64) {
    softmax_xent_kernel<<<1, kThreads, 0, s>>>(static_cast<const double*>(logits), labels, rows, classes,
                                               static_cast<double*>(loss), static_cast<double*>(grad));
  } else {
    softmax_xent_kernel<<<1, kThreads, 0, s>>>(static_cast<const float*>(logits), labels, rows, classes,
                                               static_cast<float*>(loss), static_cast<float*>(grad));
  }
  check_launch("softmax_cross_entropy");
}

}  // namespace depengine::ops::detail::cuda
