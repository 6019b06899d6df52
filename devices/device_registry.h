#pragma once
// Factories that create devices on first use, by kind (see
// register_device_factory in depengine/executor.h); create_device
// (engine/device_factory.h) is defined with them.

#include <memory>

#include "depengine/executor.h"
#include "engine/device_factory.h"

namespace depengine::detail {

/// The built-in factory of CUDA devices (devices/cuda/); an empty one when
/// depengine was built without CUDA.
DeviceFactory cuda_device_factory();


}  // namespace depengine::detail
