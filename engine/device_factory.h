#pragma once
// How the engine creates a device on its first use (e.g. cuda:0): declared
// here, defined with the factories in devices/device_registry.cpp, so that
// the engine asks for a device without including the devices' floor.

#include <memory>

#include "depengine/executor.h"

namespace depengine::detail {

/// The executor of `device` from its kind's factory, or null.
std::unique_ptr<Executor> create_device(Device device);

}  // namespace depengine::detail
