#include "bench/depbench/run_engine.h"

#include <depengine/emulated_device.h>

#include "bench/depbench/scenarios/common.h"
#include "sync/usable_cores.h"

namespace depbench {
namespace {

int workers_chosen = 0;

}  // namespace

// As the engine counts them for 0: the cores this process may run on.
int cpu_workers() { return workers_chosen > 0 ? workers_chosen : depengine::detail::usable_cores(); }

void set_cpu_workers(int workers) { workers_chosen = workers; }

RunEngine::RunEngine(depengine::EngineKind kind, Trace* trace, int emulated_devices) : trace_(trace) {
  depengine::EngineOptions options;
  options.kind = kind;
  // The mode decides the kind: DEPENGINE_ENGINE must not turn async runs sync.
  options.read_environment = false;
  options.cpu_threads = cpu_workers();
  engine_ = std::make_unique<depengine::Engine>(options);
  for (int i = 0; i < emulated_devices; ++i) depengine::add_emulated_device(*engine_, i);
  if (trace_ != nullptr) {
    profiler_ = std::make_unique<depengine::Profiler>(*engine_);
    profiler_->start();
  }
}

RunEngine::~RunEngine() {
  try {
    engine_->wait_all();
  } catch (...) {
    // The scenario reports its own errors; here we only must not throw.
  }
  if (profiler_) {
    profiler_->stop();
    trace_->json = profiler_->trace_json(trace_->options);
    trace_->ops = profiler_->ops();
    trace_->blocking_calls = profiler_->blocking_calls();
    trace_->wall_us = profiler_->wall_us();
    trace_->table = profiler_->table(depengine::StatsOrder::total, 12);
    profiler_.reset();
  }
}

}  // namespace depbench
