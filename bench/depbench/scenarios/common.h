#pragma once
// Small helpers the scenarios share.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
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

/// CPU workers of an async run's engine: --workers, or one per core. Set
/// once, by main, before any run.
int cpu_workers();
void set_cpu_workers(int workers);

/// `base` scaled by `size`, at least `min`, before any conversion to an
/// integer: what a scenario's footprint compares with the int it goes into.
inline double scaled_count(double base, double size, int min = 1) {
  return std::max<double>(min, std::round(base * size));
}

/// A matrix side scaled so that the work (~ side^3) scales with `size`,
/// rounded to a multiple of 16; before any conversion, as scaled_count.
inline double scaled_side_count(int base, double size, int min = 16) {
  return std::max<double>(min, std::round(base * std::cbrt(size) / 16.0) * 16);
}

/// `count` as an int. depbench checks every scenario's footprint before it
/// runs, so this throws only for a caller that skipped the check: a count
/// that does not fit must never wrap into a small one.
inline int checked_int(double count, const char* what) {
  if (!(count <= static_cast<double>(std::numeric_limits<int>::max()))) {
    throw std::out_of_range(std::string("depbench: ") + what + " does not fit an int at this --size");
  }
  return static_cast<int>(count);
}

/// `base` scaled by `size`, at least `min`.
inline int scaled(double base, double size, int min = 1) {
  return checked_int(scaled_count(base, size, min), "a scaled count");
}

/// scaled_side_count as an int.
inline int scaled_side(int base, double size, int min = 16) {
  return checked_int(scaled_side_count(base, size, min), "a matrix side");
}

/// Bytes of `count` floats.
inline double float_bytes(double count) { return count * sizeof(float); }

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
  }

 private:
  std::chrono::steady_clock::time_point begin_ = std::chrono::steady_clock::now();
};

}  // namespace depbench
