// Chooses the backend of a device kind. The only place that knows whether
// this build has CUDA.

#include "ops/backend.h"

#include <stdexcept>

namespace depengine::ops::detail {

const Backend& backend_for(Device device) {
  switch (device.kind) {
    case DeviceKind::cpu:
    case DeviceKind::emulated: return cpu_backend();
    case DeviceKind::cuda:
#ifdef DEPENGINE_OPS_WITH_CUDA
      return cuda_backend();
#else
      throw std::invalid_argument("depengine: tensors on " + device.to_string() +
                                  " need a build with CUDA (DEPENGINE_WITH_CUDA)");
#endif
    default:
      throw std::invalid_argument("depengine: the tensor layer has no backend for " +
                                  device.to_string());
  }
}

}  // namespace depengine::ops::detail
