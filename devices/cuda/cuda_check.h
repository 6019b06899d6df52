#pragma once
// How CUDA failures become exceptions: a std::runtime_error (or
// CudaOutOfMemory) whose message says what failed, where, and CUDA's own
// name and description of the error.

#include <cuda_runtime_api.h>

#include <exception>
#include <string>
#include <string_view>

namespace depengine::detail {

/// "depengine: <what>: <description> (<cudaErrorName>)".
std::exception_ptr cuda_error(cudaError_t code, std::string_view what);

/// Throws cuda_error(code, what) unless code is cudaSuccess.
inline void check_cuda(cudaError_t code, std::string_view what) {
  if (code != cudaSuccess) std::rethrow_exception(cuda_error(code, what));
}

/// "operation 'name' on cuda:N", for messages.
std::string describe_op(std::string_view name, int device);

}  // namespace depengine::detail
