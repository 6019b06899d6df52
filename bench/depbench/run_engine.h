#pragma once
// RunEngine: the engine of one scenario run — the naive engine for sync
// runs, the threaded one for async runs (unless the scenario asks for a
// kind) — profiled when the harness wants the run's trace.

#include <memory>
#include <string>
#include <vector>

#include <depengine/engine.h>
#include <depengine/profiler.h>

namespace depbench {

/// What the profiler recorded of one run.
struct Trace {
  depengine::TraceOptions options;  // set before the run: how to label it in the trace
  std::string json;                 // Chrome trace-event format
  std::vector<depengine::ProfiledOp> ops;
  std::vector<depengine::BlockingCall> blocking_calls;
  double wall_us = 0;
  std::string table;  // key_averages
};

class RunEngine {
 public:
  /// `trace` (may be null) receives the recording when the run ends. With
  /// `emulated_devices`, the engine gets emulated:0, emulated:1, ...
  RunEngine(depengine::EngineKind kind, Trace* trace, int emulated_devices = 0);
  /// Waits for the work, and hands the recording over.
  ~RunEngine();
  RunEngine(const RunEngine&) = delete;
  RunEngine& operator=(const RunEngine&) = delete;

  depengine::Engine& operator*() { return *engine_; }
  depengine::Engine* operator->() { return engine_.get(); }

 private:
  Trace* trace_;
  std::unique_ptr<depengine::Engine> engine_;
  std::unique_ptr<depengine::Profiler> profiler_;  // destroyed before the engine
};

}  // namespace depbench
