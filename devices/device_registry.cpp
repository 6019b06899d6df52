#include "devices/device_registry.h"

#include <array>
#include <mutex>

namespace depengine {
namespace {

struct Registry {
  // Built in rather than registered by a static object in devices/cuda/:
  // the linker drops such an object from a static library.
  Registry() { factories[static_cast<int>(DeviceKind::cuda)] = detail::cuda_device_factory(); }
  std::mutex mutex;
  std::array<DeviceFactory, 4> factories;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_device_factory(DeviceKind kind, DeviceFactory factory) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.factories[static_cast<int>(kind)] = std::move(factory);
}

namespace detail {

std::unique_ptr<Executor> create_device(Device device) {
  DeviceFactory factory;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    factory = r.factories[static_cast<int>(device.kind)];
  }
  return factory ? factory(device) : nullptr;
}

}  // namespace detail
}  // namespace depengine
