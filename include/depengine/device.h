#pragma once
/// \file device.h
/// Where an operation runs.
///
/// A `Device` is a kind plus an index. Every engine has `Device::cpu()`; other
/// kinds (`cuda`, `emulated`, or a kind an embedding framework registers)
/// exist once their executor is registered with the engine.
///
/// \code
///   depengine::Engine engine;
///   engine.push([](depengine::RunContext& ctx) { assert(ctx.device.is_cpu()); },
///               {}, {}, {.device = depengine::Device::cpu()});
/// \endcode

#include <cstdint>
#include <string>

namespace depengine {

enum class DeviceKind : std::uint8_t {
  cpu,       ///< host threads of the engine's oneTBB arena
  cuda,      ///< an NVIDIA GPU: compute and copy streams
  emulated,  ///< host threads with CUDA-like streams and events (tests, CI)
  custom,    ///< a kind registered by an embedding framework
};

/// Value type naming one device. Cheap to copy and compare.
struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static constexpr Device cpu() { return {DeviceKind::cpu, 0}; }
  static constexpr Device cuda(int i) { return {DeviceKind::cuda, i}; }
  static constexpr Device emulated(int i) { return {DeviceKind::emulated, i}; }
  static constexpr Device custom(int i) { return {DeviceKind::custom, i}; }

  constexpr bool is_cpu() const { return kind == DeviceKind::cpu; }
  friend constexpr bool operator==(Device, Device) = default;

  /// "cpu", "cuda:0", "emulated:1", "custom:2" ("cpu:1" for an index no
  /// engine has, "unknown kind 77:0" for a value outside the enum).
  std::string to_string() const;
};

}  // namespace depengine
