#pragma once
// Scenario: one workload that depbench runs twice — synchronously and
// asynchronously — with the same inputs, to compare times and results.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/depbench/run_engine.h"

namespace depbench {

enum class Mode { sync, async };
const char* to_string(Mode mode);

/// What the command line chose, shared by every scenario.
struct Config {
  /// Scales every workload (1 = the defaults, which finish in under two
  /// minutes on a 2-core machine; tests use ~0.02).
  double size = 1.0;
  int repeat = 5;
  /// "cpu", "emulated" or "cuda": where the device-placed work of the
  /// scenarios that have some goes (Scenario::runs_on_device).
  std::string device = "cpu";
  /// CPU workers of the async runs' engines; 0: one per core.
  int workers = 0;
};

/// One timed run of a scenario.
struct Outcome {
  double seconds = 0;       // the timed region only (no setup, no checking)
  std::uint64_t digest = 0;  // of the results: equal in both modes, bit for bit
  /// Computed by sync runs from their measured parts (see ideal_formula); 0 otherwise,
  /// NaN where it cannot be computed (see ScenarioResult::ideal_speedup).
  double ideal_speedup = 0;
  std::map<std::string, double> metrics;  // scenario-specific numbers, into the JSON record
  nlohmann::json details;                 // scenario-specific structure (roofline's per-op table)
};

/// What one run of a scenario needs at `Config::size`, computed without
/// running anything, so that depbench can refuse a size this machine cannot
/// hold before any work (bench/depbench/capacity.h).
struct Footprint {
  /// Each count the run keeps in an `int` (ops, matrix sides, rows,
  /// epochs), by what it counts, as the exact value before any conversion.
  std::vector<std::pair<std::string, double>> int_counts;
  double ops = 0;         // operations one run pushes (a profiled run records each)
  double host_bytes = 0;  // host memory the run holds at its peak
};

class Scenario {
 public:
  virtual ~Scenario() = default;
  virtual std::string name() const = 0;
  /// One sentence: the workload, and what sync and async mean for it.
  virtual std::string description() const = 0;
  /// How ideal_speedup is computed, in words.
  virtual std::string ideal_formula() const = 0;
  /// Whether `config.device` places any of its work; false for a scenario
  /// that runs on the CPU whatever --device says.
  virtual bool runs_on_device(const Config& config) const = 0;
  /// What one run needs at `config.size`; cheap, runs nothing.
  virtual Footprint footprint(const Config& config) const = 0;
  /// Runs once. `trace`, when not null, asks for the engine to be profiled.
  virtual Outcome run(Mode mode, const Config& config, Trace* trace) const = 0;
};

/// Every scenario, in the order depbench runs them.
std::vector<std::unique_ptr<Scenario>> all_scenarios();

}  // namespace depbench
