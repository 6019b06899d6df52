#pragma once
// --json: one record per scenario and mode.
//   {"scenario", "mode": "sync"|"async", "seconds" (median), "runs" (every
//    run's seconds), "speedup" (sync/async, the same in both records of a
//    scenario), "ideal_speedup" (null where it cannot be computed), "results_equal", "size", "repeat",
//    "device", "cpu_workers" (of the async engine), then the scenario's own fields; roofline's sync
//    record also has "ops": its per-op table; gradient_sync's records have "strategies": per
//    strategy its median "seconds", every run's, "ideal_seconds", "vs_ideal", "bottleneck_mib",
//    "shared_memory_seconds"}

#include <vector>

#include <nlohmann/json.hpp>

#include "bench/depbench/harness.h"

namespace depbench {

nlohmann::json json_records(const std::vector<ScenarioResult>& results, const Config& config);

}  // namespace depbench
