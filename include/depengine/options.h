#pragma once
/// \file options.h
/// Options of an engine and of one push.
///
/// \code
///   depengine::EngineOptions opts;
///   opts.cpu_threads = 2;                // 0: every core
///   opts.max_ops_in_flight = 1 << 16;    // back-pressure bound
///   depengine::Engine engine(opts);      // DEPENGINE_ENGINE / DEPENGINE_CPU_THREADS override
///   engine.push(fn, {a}, {b}, {.priority = 1, .name = "update"});
/// \endcode

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "depengine/device.h"

namespace depengine {

enum class EngineKind : std::uint8_t {
  Threaded,  ///< asynchronous: dependency tracking, oneTBB workers, device streams
  Naive,     ///< synchronous: every push runs to completion on the pushing thread
};

/// The most CPU workers an engine accepts (`EngineOptions::cpu_threads`,
/// `DEPENGINE_CPU_THREADS`, the C options): far more threads than cores only
/// cost memory and wake-ups.
inline constexpr int kMaxCpuThreads = 1024;

/// `EngineOptions::max_ops_in_flight` meaning "no bound".
inline constexpr std::size_t kUnlimitedOpsInFlight = SIZE_MAX;

/// Checked by the `Engine` constructor (and so by the C API): a bad value
/// throws `std::invalid_argument` naming the option.
struct EngineOptions {
  EngineKind kind = EngineKind::Threaded;
  /// Worker threads of the CPU device, 0 to kMaxCpuThreads; 0 means one per
  /// core this process may run on (its CPU affinity: taskset, a cgroup's
  /// cpuset, mpirun's binding), not one per core of the machine.
  int cpu_threads = 0;
  /// Back-pressure: a push from outside the engine blocks while more than this
  /// many operations are in flight, so memory stays bounded. At least 1;
  /// kUnlimitedOpsInFlight (or any value from 2^63 on) turns it off.
  std::size_t max_ops_in_flight = 1u << 16;
  /// When true (the default) the environment variables DEPENGINE_ENGINE,
  /// DEPENGINE_CPU_THREADS, DEPENGINE_BATCH_PUSHES and
  /// DEPENGINE_MAX_OPS_IN_FLIGHT override `kind`, `cpu_threads`,
  /// `batch_pushes` and `max_ops_in_flight`, and DEPENGINE_PROFILE and
  /// DEPENGINE_STALL_WARNING_MS turn on their diagnostics (docs/semantics.md).
  bool read_environment = true;
  /// Threaded engine: register a thread's CPU pushes in batches (see
  /// docs/semantics.md, "Batched pushes"). False registers each push at
  /// once, which costs more per operation while workers are busy; the
  /// guarantees are the same.
  bool batch_pushes = true;
};

/// How devices treat an operation (after MXNet's FnProperty).
enum class OpProperty : std::uint8_t {
  Normal,          ///< compute on `PushOptions::device`
  CopyToDevice,    ///< host-to-device copy: a device's H2D copy stream
  CopyFromDevice,  ///< device-to-host copy: a device's D2H copy stream
  DeviceToDevice,  ///< copy between devices: a device's peer copy stream
  CpuPrioritized,  ///< short CPU work that others wait on: runs before Normal CPU work
};

struct PushOptions {
  /// Among ready operations, higher priority runs first.
  int priority = 0;
  /// Shown by the profiler and in error messages. The text is copied.
  std::string_view name = {};
  Device device = Device::cpu();
  OpProperty property = OpProperty::Normal;
  /// How many bytes the op reads and writes, where known (the tensor ops
  /// fill it in). A hint: a CPU op that declares data, made ready by the
  /// completion of a short op that declares data too, stays a while with the
  /// worker that ran that op, whose cache holds its inputs, rather than go
  /// to an idle worker at once (docs/architecture.md, "Kept ops"). 0:
  /// unknown; such an op goes to an idle worker at once.
  std::size_t bytes = 0;
};

}  // namespace depengine
