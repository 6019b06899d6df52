#include "bench/depbench/json_output.h"

#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/gradient_sync.h"

namespace depbench {
namespace {

// gradient_sync's strategies, each with the medians over the runs and
// every run's time.
nlohmann::json gradient_sync_strategies(const ModeResult& m) {
  namespace gs = gradient_sync;
  nlohmann::json strategies = nlohmann::json::object();
  for (const std::string& s : gs::strategies()) {
    auto runs = m.metric_runs.find(gs::metric(s, "seconds"));
    if (runs == m.metric_runs.end()) continue;
    const double seconds = median(runs->second), ideal = median_metric(m, gs::metric(s, "ideal_s"));
    strategies[s] = {{"seconds", seconds},
                     {"runs", runs->second},
                     {"ideal_seconds", ideal},
                     {"vs_ideal", seconds / ideal},
                     {"bottleneck_mib", median_metric(m, gs::metric(s, "bottleneck_mib"))},
                     {"shared_memory_seconds", median_metric(m, gs::metric(s, "shared_memory_s"))}};
  }
  return strategies;
}

}  // namespace

nlohmann::json json_records(const std::vector<ScenarioResult>& results, const Config& config) {
  nlohmann::json records = nlohmann::json::array();
  for (const ScenarioResult& r : results) {
    for (Mode mode : {Mode::sync, Mode::async}) {
      const ModeResult& m = mode == Mode::sync ? r.sync : r.async;
      nlohmann::json rec = {{"scenario", r.name},
                            {"mode", to_string(mode)},
                            {"seconds", m.seconds},
                            {"runs", m.runs},
                            {"speedup", r.speedup},
                            {"ideal_speedup", r.ideal_speedup},
                            {"results_equal", r.results_equal},
                            {"size", config.size},
                            {"repeat", config.repeat},
                            {"device", r.on_device ? config.device : "cpu"},
                            {"cpu_workers", cpu_workers()}};
      for (const auto& [key, value] : m.metrics) rec[key] = value;
      if (mode == Mode::sync && !r.details.is_null()) rec["ops"] = r.details;
      if (r.name == "gradient_sync") rec["strategies"] = gradient_sync_strategies(m);
      records.push_back(std::move(rec));
    }
  }
  return records;
}

}  // namespace depbench
