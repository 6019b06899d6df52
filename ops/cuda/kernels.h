#pragma once
// Launchers of the tensor layer's CUDA kernels. Each enqueues on `stream` and
// returns at once; a launch error throws std::runtime_error. Element types
// follow the Backend interface (ops/backend.h). Built as C++17 by nvcc, so
// only C++17 headers here.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "depengine/dtype.h"
#include "ops/binary_op.h"

namespace depengine::ops::detail::cuda {

void launch_fill(void* out, std::int64_t n, std::size_t element_size, std::uint64_t bits, cudaStream_t stream);
void launch_convert(DType from, const void* in, DType to, void* out, std::int64_t n, cudaStream_t stream);
void launch_binary(BinaryOp op, DType t, const void* a, const void* b, std::int64_t nb, void* out,
                   std::int64_t n, cudaStream_t stream);
void launch_axpby(DType t, double alpha, const void* x, double beta, void* y, std::int64_t n,
                  cudaStream_t stream);
void launch_scale(DType t, double alpha, const void* x, void* out, std::int64_t n, cudaStream_t stream);
void launch_relu(DType t, const void* x, void* out, std::int64_t n, cudaStream_t stream);
void launch_relu_grad(DType t, const void* x, const void* grad_out, void* grad_in, std::int64_t n,
                      cudaStream_t stream);
void launch_reduce_sum(DType t, const void* x, std::int64_t outer, std::int64_t len, std::int64_t inner,
                       double scale, void* out, cudaStream_t stream);
void launch_softmax_cross_entropy(DType t, const void* logits, const std::int32_t* labels,
                                  std::int64_t rows, std::int64_t classes, void* loss, void* grad,
                                  cudaStream_t stream);

/// Throws std::runtime_error naming `what` if the last launch failed.
void check_launch(const char* what);

}  // namespace depengine::ops::detail::cuda
