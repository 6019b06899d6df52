#pragma once
/// \file stream_role.h
/// Which stream of a stream device (CUDA, emulated) an operation goes to.
///
/// A stream device has several compute streams and one copy stream per copy
/// direction, so that copies overlap with compute. `PushOptions::property`
/// chooses: `OpProperty::CopyToDevice` goes to the host-to-device copy
/// stream, `CopyFromDevice` to the device-to-host one, `DeviceToDevice` to the
/// peer copy stream, anything else to a compute stream.
///
/// \code
///   engine.push(upload, {}, {x}, {.device = depengine::Device::cuda(0),
///                                 .property = depengine::OpProperty::CopyToDevice});
///   assert(depengine::stream_role_of(depengine::OpProperty::CopyToDevice) ==
///          depengine::StreamRole::copy_to_device);
/// \endcode

#include <cstdint>

#include "depengine/options.h"

namespace depengine {

enum class StreamRole : std::uint8_t {
  compute,
  copy_to_device,
  copy_from_device,
  device_to_device,
};

constexpr StreamRole stream_role_of(OpProperty property) {
  switch (property) {
    case OpProperty::CopyToDevice:
      return StreamRole::copy_to_device;
    case OpProperty::CopyFromDevice:
      return StreamRole::copy_from_device;
    case OpProperty::DeviceToDevice:
      return StreamRole::device_to_device;
    case OpProperty::Normal:
    case OpProperty::CpuPrioritized:
      break;
  }
  return StreamRole::compute;
}

}  // namespace depengine
