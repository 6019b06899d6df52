#pragma once
/// \file cuda_memory.h
/// GPU memory for the tensor layer and for operations on `Device::cuda(i)`:
/// a caching device allocator and a pinned host memory pool.
///
/// Freed blocks are cached per device and size class and handed out again by
/// later allocations, without a `cudaFree` (which synchronizes the device).
/// `cuda_free` makes a block reusable at once, so free a buffer only once no
/// operation can touch it any more: in the `release` of `Engine::delete_var`,
/// which runs after every earlier operation on the variable completed on
/// every stream. Copies overlap with compute only from pinned host memory.
///
/// Thread safety: every function may be called from any thread.
/// Without CUDA (built with `DEPENGINE_WITH_CUDA=OFF`, or no toolkit),
/// `cuda_device_count()` is 0 and the allocation functions throw
/// `std::runtime_error`.
///
/// \code
///   #include <depengine/cuda_memory.h>
///
///   const std::size_t bytes = n * sizeof(float);
///   float* dev = static_cast<float*>(depengine::cuda_alloc(0, bytes));
///   float* host = static_cast<float*>(depengine::cuda_pinned_alloc(bytes));
///   depengine::Var x = engine.new_var("x");
///   engine.push([=](depengine::RunContext& ctx) {
///     cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice,
///                     static_cast<cudaStream_t>(ctx.stream));
///   }, {}, {x}, {.device = depengine::Device::cuda(0),
///                .property = depengine::OpProperty::CopyToDevice});
///   engine.delete_var(x, [=] {
///     depengine::cuda_free(0, dev, bytes);
///     depengine::cuda_pinned_free(host, bytes);
///   });
/// \endcode

#include <cstddef>
#include <new>
#include <string>

namespace depengine {

/// Thrown when device or pinned memory runs out even after the caches were
/// emptied. Derives from `std::bad_alloc`; `what()` names the device and size.
class CudaOutOfMemory : public std::bad_alloc {
 public:
  explicit CudaOutOfMemory(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

/// Number of usable CUDA GPUs; 0 without a GPU, a driver or CUDA support.
int cuda_device_count();

/// `bytes` of memory on GPU `device` (256-byte aligned). Throws
/// `std::invalid_argument` for a device that does not exist.
void* cuda_alloc(int device, std::size_t bytes);
/// Returns a block of `cuda_alloc(device, bytes)` to the cache (same `bytes`).
void cuda_free(int device, void* ptr, std::size_t bytes);

/// `bytes` of page-locked host memory, usable by copies on every GPU.
void* cuda_pinned_alloc(std::size_t bytes);
/// Returns a block of `cuda_pinned_alloc(bytes)` to the pool (same `bytes`).
void cuda_pinned_free(void* ptr, std::size_t bytes);

/// Gives every cached free block (device and pinned) back to CUDA.
void cuda_release_cached_memory();

}  // namespace depengine
