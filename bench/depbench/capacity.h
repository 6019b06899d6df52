#pragma once
// What this machine can hold: depbench checks every chosen scenario's
// footprint (Scenario::footprint) at the requested --size before it runs
// anything, so that an absurd size is refused with the reason and the
// largest size that fits, instead of wrapping a count or dying of
// std::bad_alloc minutes later.
//
//   const Machine machine = Machine::this_one();
//   if (std::string why = size_too_large(config, planned, machine); !why.empty()) { report(why); }

#include <string>
#include <vector>

#include "bench/depbench/scenario.h"

namespace depbench {

struct Machine {
  double memory_bytes = 0;  // physical memory: sysconf(_SC_PHYS_PAGES) * page size
  static Machine this_one();
};

/// A scenario as depbench will run it: `traced` when one run is profiled
/// (--trace, or the timeline of --report), which keeps a record of every op.
struct PlannedScenario {
  const Scenario* scenario = nullptr;
  bool traced = false;
};

/// Host memory the profiler and the merged trace keep per recorded op, at
/// most (the record, its trace event, and the event parsed again to merge).
inline constexpr double kTracedBytesPerOp = 4096;

/// Why `config.size` is too large for `planned` on `machine` (each scenario's
/// first count that does not fit its int, or its memory beyond the
/// machine's), with the largest size at which every one of them fits; ""
/// when it fits. `config.size` must be finite and positive.
std::string size_too_large(const Config& config, const std::vector<PlannedScenario>& planned, const Machine& machine);

}  // namespace depbench
