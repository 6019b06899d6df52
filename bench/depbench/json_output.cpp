#include "bench/depbench/json_output.h"

#include "bench/depbench/scenarios/common.h"

namespace depbench {

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
      records.push_back(std::move(rec));
    }
  }
  return records;
}

}  // namespace depbench
