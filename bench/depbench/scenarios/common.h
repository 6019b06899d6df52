#pragma once
// Small helpers the scenarios share.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include <depengine/engine.h>

#include "bench/depbench/scenario.h"

namespace depbench {

/// Where the device work of a scenario goes: device `index` of --device
/// (emulated:index), or the CPU.
inline depengine::Device work_device(const Config& config, int index) {
  return config.device == "emulated" ? depengine::Device::emulated(index) : depengine::Device::cpu();
}

/// Emulated devices a run's engine needs for --device.
inline int emulated_devices(const Config& config, int count) { return config.device == "emulated" ? count : 0; }

/// What OpTimes calls the stream (or the CPU) an op placed on `device` with
/// `property` runs on.
inline std::string resource_of(depengine::Device device, depengine::OpProperty property) {
  if (device.is_cpu()) return "cpu";
  return device.to_string() + (property == depengine::OpProperty::CopyFromDevice ? " copy D2H" : " compute");
}

inline depengine::EngineKind engine_kind(Mode mode) {
  return mode == Mode::sync ? depengine::EngineKind::Naive : depengine::EngineKind::Threaded;
}

/// CPU workers of an async run's engine (one per core).
inline int cpu_workers() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

/// `base` scaled by `size`, at least `min`.
inline int scaled(double base, double size, int min = 1) {
  return std::max(min, static_cast<int>(std::lround(base * size)));
}

/// A matrix side scaled so that the work (~ side^3) scales with `size`,
/// rounded to a multiple of 16.
inline int scaled_side(int base, double size, int min = 16) {
  const int side = static_cast<int>(std::lround(base * std::cbrt(size) / 16.0)) * 16;
  return std::max(min, side);
}

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
  }

 private:
  std::chrono::steady_clock::time_point begin_ = std::chrono::steady_clock::now();
};

}  // namespace depbench
