// depbench: the sync-against-async harness. See docs/depbench.md.

#include <fstream>
#include <iostream>

#include <depengine/profiler.h>
#include <nlohmann/json.hpp>

#include "bench/depbench/cli.h"
#include "bench/depbench/harness.h"
#include "bench/depbench/html_report.h"
#include "bench/depbench/json_output.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/progress.h"
#include "bench/depbench/table.h"

namespace {

bool write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  out.close();
  if (!out) std::cerr << "depbench: cannot write '" << path << "'\n";
  return static_cast<bool>(out);
}

// Every traced run in one trace: each recording already carries its own
// process ids and labels.
std::string merged_trace(const std::vector<depbench::ScenarioResult>& results) {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& r : results) {
    if (!r.trace) continue;
    nlohmann::json trace = nlohmann::json::parse(r.trace->json);
    for (auto& e : trace.at("traceEvents")) events.push_back(std::move(e));
  }
  return nlohmann::json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace depbench;
  auto parsed = parse_command_line(argc, argv, std::cout, std::cerr);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const Options& options = std::get<Options>(parsed);
  if (!options.trace_path.empty() && !depengine::Profiler::available()) {
    std::cerr << "depbench: --trace needs the profiler, and this build compiled its hooks out "
                 "(DEPENGINE_PROFILER_HOOKS=OFF)\n";
    return 2;
  }

  // The report draws the timeline of one scenario: the training step when it runs.
  std::string timeline;
  if (!options.report_path.empty()) {
    const auto& names = options.scenarios;
    timeline = std::find(names.begin(), names.end(), "training_step") != names.end() ? "training_step" : names.back();
  }

  init_kernels();
  std::vector<ScenarioResult> results;
  {
    ProgressLine progress;
    const auto scenarios = all_scenarios();
    int index = 0;
    for (const std::string& name : options.scenarios) {
      ++index;
      for (const auto& scenario : scenarios) {
        if (scenario->name() != name) continue;
        const depengine::TraceOptions trace{.label = name, .pid_offset = 100 * index};
        const bool traced = !options.trace_path.empty() || name == timeline;
        results.push_back(run_scenario(*scenario, options.config, traced ? &trace : nullptr,
                                       [&](const std::string& what, Mode mode, int run, int runs) {
                                         progress.show(index, static_cast<int>(options.scenarios.size()), what,
                                                       mode, run, runs);
                                       }));
      }
    }
  }

  std::cout << summary_table(results, options.config);
  bool ok = true;
  if (!options.json_path.empty()) {
    ok = write_file(options.json_path, json_records(results, options.config).dump(2) + "\n") && ok;
    if (ok) std::cout << "\nwrote " << options.json_path;
  }
  if (!options.report_path.empty()) {
    ok = write_file(options.report_path, html_report(results, options.config, timeline)) && ok;
    if (ok) std::cout << "\nwrote " << options.report_path << " (open it in a browser)";
  }
  if (!options.trace_path.empty()) {
    ok = write_file(options.trace_path, merged_trace(results)) && ok;
    if (ok) std::cout << "\nwrote " << options.trace_path << " (open it in https://ui.perfetto.dev or chrome://tracing)";
  }
  std::cout << "\n";
  bool all_equal = true;
  for (const auto& r : results) all_equal = all_equal && r.results_equal;
  // Different results are a bug in the engine: fail loudly.
  return ok && all_equal ? 0 : 1;
}
