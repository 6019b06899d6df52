#pragma once
// Factories that create devices on first use, by kind (see
// register_device_factory in depengine/executor.h).

#include <memory>

#include "depengine/executor.h"

namespace depengine::detail {

/// The built-in factory of CUDA devices (devices/cuda/); an empty one when
/// depengine was built without CUDA.
DeviceFactory cuda_device_factory();

/// The executor of `device` from its kind's factory, or null.
std::unique_ptr<Executor> create_device(Device device);

}  // namespace depengine::detail
