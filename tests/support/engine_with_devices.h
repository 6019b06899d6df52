#pragma once
// engine_with_devices(n): a threaded (or naive) engine of two CPU workers
// with emulated devices 0..n-1 — the setting of the collectives' and the
// KVStore's tests.

#include <memory>

#include <depengine/emulated_device.h>
#include <depengine/engine.h>

inline std::unique_ptr<depengine::Engine> engine_with_devices(
    int devices, depengine::EngineKind kind = depengine::EngineKind::Threaded, int compute_streams = 1) {
  auto engine = std::make_unique<depengine::Engine>(
      depengine::EngineOptions{.kind = kind, .cpu_threads = 2, .read_environment = false});
  for (int d = 0; d < devices; ++d) depengine::add_emulated_device(*engine, d, {.compute_streams = compute_streams});
  return engine;
}
