// depengine built without CUDA: no CUDA device kind, no GPU memory. The
// functions exist so that code written for GPUs links and checks
// cuda_device_count() at run time.

#include <stdexcept>

#include "depengine/cuda_memory.h"
#include "devices/device_registry.h"

namespace depengine {
namespace {

[[noreturn]] void unavailable() { throw std::runtime_error("depengine: built without CUDA support"); }

}  // namespace

int cuda_device_count() { return 0; }
void* cuda_alloc(int, std::size_t) { unavailable(); }
void cuda_free(int, void*, std::size_t) { unavailable(); }
void* cuda_pinned_alloc(std::size_t) { unavailable(); }
void cuda_pinned_free(void*, std::size_t) { unavailable(); }
void cuda_release_cached_memory() {}

namespace detail {
DeviceFactory cuda_device_factory() { return nullptr; }
}  // namespace detail

}  // namespace depengine
