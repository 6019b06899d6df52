// The caching device allocator and the pinned host pool of
// depengine/cuda_memory.h.

#include "depengine/cuda_memory.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "devices/cuda/block_cache.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device_guard.h"

namespace depengine {
namespace {

using detail::BlockCache;
using detail::check_cuda;

// Never destroyed: blocks may be freed by static destructors, and freeing
// them back to CUDA at exit would race with the runtime's own teardown.
std::vector<std::unique_ptr<BlockCache>>& device_caches() {
  static auto* caches = [] {
    auto* c = new std::vector<std::unique_ptr<BlockCache>>();
    for (int i = 0; i < cuda_device_count(); ++i) c->push_back(std::make_unique<BlockCache>());
    return c;
  }();
  return *caches;
}

BlockCache& pinned_cache() {
  static auto* cache = new BlockCache;
  return *cache;
}

BlockCache& cache_of(int device) {
  if (device < 0 || device >= cuda_device_count()) {
    throw std::invalid_argument("depengine: no CUDA device " + std::to_string(device) + " (this machine has " +
                                std::to_string(cuda_device_count()) + ")");
  }
  return *device_caches()[device];
}

void free_device_blocks(int device, std::vector<void*> blocks) {
  if (blocks.empty()) return;
  detail::DeviceGuard guard(device);
  for (void* block : blocks) cudaFree(block);
}

void free_pinned_blocks(std::vector<void*> blocks) {
  for (void* block : blocks) cudaFreeHost(block);
}

[[noreturn]] void out_of_memory(const std::string& where, std::size_t bytes) {
  cudaGetLastError();  // an allocation failure is not sticky: clear it
  throw CudaOutOfMemory("depengine: out of memory on " + where + " allocating " + std::to_string(bytes) +
                        " bytes (cached free blocks were released first)");
}

}  // namespace

int cuda_device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // no driver or no GPU: not an error, just no device
      n = 0;
    }
    return n;
  }();
  return count;
}

void* cuda_alloc(int device, std::size_t bytes) {
  BlockCache& cache = cache_of(device);
  const std::size_t size = BlockCache::size_class(bytes);
  if (void* block = cache.take(size)) return block;
  detail::DeviceGuard guard(device);
  void* block = nullptr;
  cudaError_t code = cudaMalloc(&block, size);
  if (code == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    free_device_blocks(device, cache.drain());
    code = cudaMalloc(&block, size);
  }
  if (code == cudaErrorMemoryAllocation) out_of_memory("cuda:" + std::to_string(device), bytes);
  check_cuda(code, "cudaMalloc on cuda:" + std::to_string(device));
  return block;
}

void cuda_free(int device, void* ptr, std::size_t bytes) {
  if (ptr != nullptr) cache_of(device).put(ptr, BlockCache::size_class(bytes));
}

void* cuda_pinned_alloc(std::size_t bytes) {
  if (cuda_device_count() == 0) throw std::runtime_error("depengine: pinned host memory needs a CUDA GPU");
  const std::size_t size = BlockCache::size_class(bytes);
  if (void* block = pinned_cache().take(size)) return block;
  void* block = nullptr;
  // Portable: usable by copies on every GPU, not only the current one.
  cudaError_t code = cudaHostAlloc(&block, size, cudaHostAllocPortable);
  if (code == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    free_pinned_blocks(pinned_cache().drain());
    code = cudaHostAlloc(&block, size, cudaHostAllocPortable);
  }
  if (code == cudaErrorMemoryAllocation) out_of_memory("the host (pinned memory)", bytes);
  check_cuda(code, "cudaHostAlloc");
  return block;
}

void cuda_pinned_free(void* ptr, std::size_t bytes) {
  if (ptr != nullptr) pinned_cache().put(ptr, BlockCache::size_class(bytes));
}

void cuda_release_cached_memory() {
  for (int device = 0; device < cuda_device_count(); ++device) {
    free_device_blocks(device, device_caches()[device]->drain());
  }
  free_pinned_blocks(pinned_cache().drain());
}

}  // namespace depengine
