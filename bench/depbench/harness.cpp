#include "bench/depbench/harness.h"

#include <algorithm>

#include <depengine/profiler.h>

namespace depbench {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double median_metric(const ModeResult& m, const std::string& name) {
  auto it = m.metric_runs.find(name);
  return it == m.metric_runs.end() ? 0 : median(it->second);
}

ScenarioResult run_scenario(const Scenario& scenario, const Config& config, const depengine::TraceOptions* trace,
                            const ProgressFn& progress) {
  ScenarioResult r;
  r.name = scenario.name();
  r.description = scenario.description();
  r.ideal_formula = scenario.ideal_formula();
  r.on_device = scenario.runs_on_device(config);
  std::vector<double> ideals;
  std::vector<std::uint64_t> digests;
  for (int i = 0; i < config.repeat; ++i) {
    for (Mode mode : {Mode::sync, Mode::async}) {
      if (progress) progress(r.name, mode, i + 1, config.repeat);
      Outcome o = scenario.run(mode, config, nullptr);
      digests.push_back(o.digest);
      ModeResult& m = mode == Mode::sync ? r.sync : r.async;
      m.runs.push_back(o.seconds);
      for (const auto& [name, value] : o.metrics) m.metric_runs[name].push_back(value);
      m.metrics = std::move(o.metrics);
      if (mode == Mode::sync) {
        ideals.push_back(o.ideal_speedup);
        r.details = std::move(o.details);
      }
    }
  }
  // Without the profiler's hooks there is no trace to take.
  if (trace != nullptr && depengine::Profiler::available()) {
    if (progress) progress(r.name + " (traced)", Mode::async, 1, 1);
    r.trace.emplace();
    r.trace->options = *trace;
    digests.push_back(scenario.run(Mode::async, config, &*r.trace).digest);
  }
  r.sync.seconds = median(r.sync.runs);
  r.async.seconds = median(r.async.runs);
  r.speedup = r.async.seconds > 0 ? r.sync.seconds / r.async.seconds : 0;
  r.ideal_speedup = median(ideals);
  r.results_equal = std::all_of(digests.begin(), digests.end(), [&](std::uint64_t d) { return d == digests.front(); });
  return r;
}

}  // namespace depbench
