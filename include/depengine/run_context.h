#pragma once
/// \file run_context.h
/// What an operation learns about where it runs.
///
/// \code
///   engine.push([](depengine::RunContext& ctx) {
///     if (ctx.device.kind == depengine::DeviceKind::cuda) {
///       my_kernel<<<grid, block, 0, static_cast<cudaStream_t>(ctx.stream)>>>();
///     }
///   }, {x}, {y}, {.device = depengine::Device::cuda(0)});
/// \endcode

#include <string_view>

#include "depengine/device.h"
#include "depengine/options.h"

namespace depengine {

struct RunContext {
  /// The device the operation was placed on.
  Device device;
  /// For stream devices, the stream the operation must enqueue its work on:
  /// a `cudaStream_t` on CUDA, an `EmulatedStream*` on the emulated device;
  /// null on the CPU.
  void* stream = nullptr;
  /// Index of the stream within the device's pool (for profiling and tests).
  int stream_index = -1;
  OpProperty property = OpProperty::Normal;
  std::string_view name;
};

}  // namespace depengine
