#include "devices/cuda/cuda_check.h"

#include <stdexcept>

#include "depengine/cuda_memory.h"

namespace depengine::detail {

std::exception_ptr cuda_error(cudaError_t code, std::string_view what) {
  std::string message = "depengine: " + std::string(what) + ": " + cudaGetErrorString(code) + " (" +
                        cudaGetErrorName(code) + ")";
  if (code == cudaErrorMemoryAllocation) return std::make_exception_ptr(CudaOutOfMemory(std::move(message)));
  return std::make_exception_ptr(std::runtime_error(std::move(message)));
}

std::string describe_op(std::string_view name, int device) {
  const std::string where = " on cuda:" + std::to_string(device);
  return name.empty() ? "an operation" + where : "operation '" + std::string(name) + "'" + where;
}

}  // namespace depengine::detail
