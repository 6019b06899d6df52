#pragma once
// Small helpers the scenarios share.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

#include <depengine/cuda_memory.h>
#include <depengine/engine.h>

#include "bench/depbench/scenario.h"

namespace depbench {

inline bool on_cuda(const Config& config) { return config.device == "cuda"; }

/// Where the device work of a scenario goes: device `index` of --device
/// (emulated:index; cuda:index where the machine has that many GPUs, else a
/// GPU shared with a lower index, whose compute streams the engine spreads
/// independent work over), or the CPU.
inline depengine::Device work_device(const Config& config, int index) {
  if (on_cuda(config)) return depengine::Device::cuda(index % std::max(1, depengine::cuda_device_count()));
  return config.device == "emulated" ? depengine::Device::emulated(index) : depengine::Device::cpu();
}

/// Emulated devices a run's engine needs for --device.
inline int emulated_devices(const Config& config, int count) { return config.device == "emulated" ? count : 0; }

/// What OpTimes calls the stream (or the CPU) an op placed on `device` with
/// `property` runs on.
inline std::string resource_of(depengine::Device device, depengine::OpProperty property) {
  if (device.is_cpu()) return "cpu";
  switch (property) {
    case depengine::OpProperty::CopyFromDevice:
      return device.to_string() + " copy D2H";
    case depengine::OpProperty::CopyToDevice:
      return device.to_string() + " copy H2D";
    default:
      return device.to_string() + " compute";
  }
}

/// Call before a scenario's first cuBLAS call. The digests of the two modes
/// are compared bit for bit, and cuBLAS guarantees the same bits for the same
/// call only while one stream is active, unless each stream has its own
/// workspace: this (documented) setting gives it that. Respects a value the
/// user set.
inline void ask_cublas_for_reproducible_results() { ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0); }

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
