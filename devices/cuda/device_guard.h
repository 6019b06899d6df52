#pragma once
// DeviceGuard: makes a GPU current on this thread for a scope and restores
// the previous one, because the launching thread may be a frontend thread
// whose own CUDA code relies on its current device.

#include <cuda_runtime_api.h>

#include "devices/cuda/cuda_check.h"

namespace depengine::detail {

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) {
      check_cuda(cudaSetDevice(device), "cudaSetDevice");
      changed_ = true;
    }
  }
  ~DeviceGuard() {
    if (changed_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

}  // namespace depengine::detail
