// depbench: the sync-against-async harness. See docs/depbench.md.

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>
#include <string>

#include <depengine/profiler.h>
#include <nlohmann/json.hpp>

#include "bench/depbench/capacity.h"
#include "bench/depbench/cli.h"
#include "bench/depbench/harness.h"
#include "bench/depbench/html_report.h"
#include "bench/depbench/json_output.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/progress.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/table.h"
#include "bench/support/cpu_speeds.h"
#include "bench/support/cross_core_roundtrip.h"

namespace {

// Exit codes besides 0: 1 when results differ or an output cannot be
// written at the end, 2 for a bad command line (size, unwritable output
// included: nothing ran), 3 when a scenario stopped on an error.
constexpr int kFailed = 1, kBadCommandLine = 2, kStoppedOnError = 3;

// An output file, opened (created, or truncated) before anything runs so that
// an unwritable path is reported at once, not after all the work.
struct OutputFile {
  std::string path;
  std::ofstream stream;

  bool open(const std::string& file) {
    path = file;
    if (path.empty()) return true;
    stream.open(path, std::ios::binary | std::ios::trunc);
    if (!stream) std::cerr << "depbench: cannot write '" << path << "': " << std::strerror(errno) << "\n";
    return static_cast<bool>(stream);
  }
  bool wanted() const { return !path.empty(); }
  bool write(const std::string& content) {
    stream << content;
    stream.close();
    if (!stream) std::cerr << "depbench: cannot write '" << path << "'\n";
    return static_cast<bool>(stream);
  }
};

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

int run(const depbench::Options& options, std::string& running) {
  using namespace depbench;
  if (!options.trace_path.empty() && !depengine::Profiler::available()) {
    std::cerr << "depbench: --trace needs the profiler, and this build compiled its hooks out "
                 "(DEPENGINE_PROFILER_HOOKS=OFF)\n";
    return kBadCommandLine;
  }
  set_cpu_workers(options.config.workers);

  // The report draws the timeline of one scenario: the training step when it runs.
  std::string timeline;
  if (!options.report_path.empty()) {
    const auto& names = options.scenarios;
    timeline = std::find(names.begin(), names.end(), "training_step") != names.end() ? "training_step" : names.back();
  }

  const auto scenarios = all_scenarios();
  std::vector<PlannedScenario> planned;
  for (const std::string& name : options.scenarios) {
    for (const auto& scenario : scenarios) {
      if (scenario->name() != name) continue;
      const bool traced = (!options.trace_path.empty() || name == timeline) && depengine::Profiler::available();
      planned.push_back({scenario.get(), traced});
    }
  }
  if (const std::string why = size_too_large(options.config, planned, Machine::this_one()); !why.empty()) {
    std::cerr << "depbench: " << why << "\n";
    return kBadCommandLine;
  }

  // Two outputs in one file would overwrite each other.
  const std::pair<const char*, const std::string*> outputs[] = {
      {"--json", &options.json_path}, {"--report", &options.report_path}, {"--trace", &options.trace_path}};
  for (std::size_t i = 0; i < std::size(outputs); ++i) {
    for (std::size_t j = i + 1; j < std::size(outputs); ++j) {
      const std::string &a = *outputs[i].second, &b = *outputs[j].second;
      std::error_code error;
      if (!a.empty() && !b.empty() &&
          std::filesystem::weakly_canonical(a, error) == std::filesystem::weakly_canonical(b, error)) {
        std::cerr << "depbench: " << outputs[i].first << " and " << outputs[j].first << " name the same file '" << a
                  << "'\n";
        return kBadCommandLine;
      }
    }
  }
  OutputFile json, report, trace;
  if (!json.open(options.json_path) || !report.open(options.report_path) || !trace.open(options.trace_path)) {
    return kBadCommandLine;
  }

  init_kernels();
  // Runs in one of the machine's slow spells of cross-core traffic move the
  // async modes most (docs/performance.md, "Slow spells"): said with the results.
  const double roundtrip_before_ns = depengine::bench::cross_core_roundtrip_ns();
  // So do CPUs that run memory-bound ops at different speeds: a sync run
  // and an async run may have met different ones.
  const std::vector<double> speeds_before = depengine::bench::cpu_speeds_us();
  std::vector<ScenarioResult> results;
  {
    ProgressLine progress;
    int index = 0;
    for (const PlannedScenario& p : planned) {
      ++index;
      running = p.scenario->name();
      const depengine::TraceOptions trace_options{.label = running, .pid_offset = 100 * index};
      results.push_back(run_scenario(*p.scenario, options.config, p.traced ? &trace_options : nullptr,
                                     [&](const std::string& what, Mode mode, int run, int runs) {
                                       progress.show(index, static_cast<int>(planned.size()), what, mode, run, runs);
                                     }));
    }
    running = "writing the results";
  }

  const double roundtrip_after_ns = depengine::bench::cross_core_roundtrip_ns();
  const std::vector<double> speeds_after = depengine::bench::cpu_speeds_us();
  std::cout << summary_table(results, options.config);
  if (const std::string line = depengine::bench::roundtrips_line(roundtrip_before_ns, roundtrip_after_ns);
      !line.empty()) {
    std::cout << "\n" << line << "\n";
  }
  if (const std::string line = depengine::bench::cpu_speeds_line(speeds_before, speeds_after); !line.empty()) {
    std::cout << line << "\n";
  }
  bool ok = true;
  if (json.wanted()) {
    ok = json.write(json_records(results, options.config).dump(2) + "\n") && ok;
    if (ok) std::cout << "\nwrote " << json.path;
  }
  if (report.wanted()) {
    ok = report.write(html_report(results, options.config, timeline)) && ok;
    if (ok) std::cout << "\nwrote " << report.path << " (open it in a browser)";
  }
  if (trace.wanted()) {
    ok = trace.write(merged_trace(results)) && ok;
    if (ok) std::cout << "\nwrote " << trace.path << " (open it in https://ui.perfetto.dev or chrome://tracing)";
  }
  std::cout << "\n";
  bool all_equal = true;
  for (const auto& r : results) all_equal = all_equal && r.results_equal;
  // Different results are a bug in the engine: fail loudly.
  return ok && all_equal ? 0 : kFailed;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace depbench;
  std::string running = "starting";  // what was under way, for an error's message
  try {
    auto parsed = parse_command_line(argc, argv, std::cout, std::cerr);
    if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
    return run(std::get<Options>(parsed), running);
  } catch (const std::bad_alloc&) {
    std::cerr << "\ndepbench: out of memory (std::bad_alloc) in " << running
              << "; try a smaller --size, or close what else uses this machine's memory\n";
  } catch (const std::exception& e) {
    std::cerr << "\ndepbench: stopped on an error in " << running << ": " << e.what() << "\n";
  } catch (...) {
    std::cerr << "\ndepbench: stopped on an unknown exception in " << running << "\n";
  }
  return kStoppedOnError;
}
