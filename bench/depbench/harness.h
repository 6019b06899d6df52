#pragma once
// The harness: runs a scenario in both modes, `repeat` times each
// (alternating, so that a noisy neighbour hurts both alike), compares the
// results and summarises the times. One extra async run, untimed, is
// profiled when a trace is wanted, so that profiling never skews a number.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/depbench/scenario.h"

namespace depbench {

struct ModeResult {
  double seconds = 0;  // median of the runs
  std::vector<double> runs;
  std::map<std::string, double> metrics;  // of the last run
  std::map<std::string, std::vector<double>> metric_runs;  // each metric's value in every run
};

/// The median of `values` (0 for none).
double median(std::vector<double> values);
/// The median over the runs of `m`'s metric `name` (0 where no run has it).
double median_metric(const ModeResult& m, const std::string& name);

struct ScenarioResult {
  std::string name, description, ideal_formula;
  ModeResult sync, async;
  double speedup = 0;        // sync / async
  // Median over the sync runs; NaN where it cannot be computed (training_step
  // measures it with the profiler, which a build with
  // DEPENGINE_PROFILER_HOOKS=OFF does not have).
  double ideal_speedup = 0;
  bool results_equal = false;
  bool on_device = false;  // Scenario::runs_on_device: false where --device changed nothing
  nlohmann::json details;
  std::optional<Trace> trace;  // one async run, when asked for
};

/// Told what runs next ("roofline", "async", 2, 3); for the progress line.
using ProgressFn = std::function<void(const std::string& scenario, Mode mode, int run, int runs)>;

/// `trace`, when not null, asks for a profiled async run labelled so.
ScenarioResult run_scenario(const Scenario& scenario, const Config& config, const depengine::TraceOptions* trace,
                            const ProgressFn& progress = {});

}  // namespace depbench
