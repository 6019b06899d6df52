#include "bench/depbench/cli.h"

#include <cmath>
#include <ostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <depengine/cuda_memory.h>

namespace depbench {
namespace {

// Why --device cuda cannot run here, or "" when it can.
std::string cuda_unavailable_reason() {
  if (depengine::cuda_device_count() > 0) return "";
#ifdef DEPBENCH_CUDA_BUILT
  return "no usable CUDA GPU here (none found, or no driver)";
#else
  return "this build has no CUDA support (configure with -DDEPENGINE_WITH_CUDA=ON and the CUDA toolkit)";
#endif
}

}  // namespace

std::variant<Options, int> parse_command_line(int argc, char** argv, std::ostream& out, std::ostream& err) {
  std::vector<std::string> names;
  std::string name_list;
  for (const auto& s : all_scenarios()) {
    names.push_back(s->name());
    name_list += (name_list.empty() ? "" : ", ") + s->name();
  }

  Options o;
  CLI::App app(
      "depbench: runs the same workloads synchronously and asynchronously on depengine, checks that both give\n"
      "the same results, and reports both times, the speedup, and the ideal speedup from measured parts.",
      "depbench");
  app.get_formatter()->column_width(26);
  std::string scenarios = "all";
  app.add_option("--scenario", scenarios, "Comma-separated scenarios to run, or 'all': " + name_list)
      ->capture_default_str();
  app.add_option("--size", o.config.size,
                 "Scale of every workload (1 = the defaults; 0.1 for a quick look); at most what this machine "
                 "can hold, which depbench checks before it runs anything")
      ->check(
          [](const std::string& value) -> std::string {
            // CLI11's own PositiveNumber message quotes the largest double.
            try {
              std::size_t end = 0;
              const double size = std::stod(value, &end);
              if (size > 0 && std::isfinite(size) && end == value.size()) return "";
            } catch (const std::exception&) {
            }
            return "must be a finite positive number, not '" + value + "'";
          },
          "POSITIVE")
      ->capture_default_str();
  app.add_option("--repeat", o.config.repeat, "Runs per mode; times are medians")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--device", o.config.device,
                 "Where device work runs: cpu (the CPU workers), emulated (emulated devices: streams on host "
                 "threads) or cuda (GPU 0, and GPU 1 where a scenario wants two and the machine has it)")
      ->check(CLI::IsMember({"cpu", "emulated", "cuda"}))
      ->capture_default_str();
  app.add_option("--workers", o.config.workers,
                 "CPU workers of the async runs' engine (0: one per core this process may run on); the ideal speedups count them too")
      ->check(CLI::Range(0, depengine::kMaxCpuThreads))
      ->capture_default_str();
  app.add_option("--json", o.json_path, "Write one JSON record per scenario and mode to FILE")->option_text("FILE");
  app.add_option("--report", o.report_path,
                 "Write a self-contained HTML report (bar chart, roofline, timeline) to FILE")
      ->option_text("FILE.html");
  app.add_option("--trace", o.trace_path,
                 "Write a Chrome trace (Perfetto, chrome://tracing) of one async run per scenario to FILE")
      ->option_text("FILE.json");
  app.footer("Example: depbench --scenario auto_parallel,training_step --report report.html --trace trace.json");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  }

  if (o.config.device == "cuda") {
    if (const std::string reason = cuda_unavailable_reason(); !reason.empty()) {
      err << "depbench: --device cuda: " << reason << "\n";
      return 2;
    }
  }

  if (scenarios == "all") {
    o.scenarios = names;
  } else {
    std::stringstream list(scenarios);
    for (std::string name; std::getline(list, name, ',');) {
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        err << "depbench: unknown scenario '" << name << "'; choose from: " << name_list << ", all\n";
        return 2;
      }
      o.scenarios.push_back(name);
    }
    if (o.scenarios.empty()) {
      err << "depbench: --scenario needs at least one name\n";
      return 2;
    }
  }
  return o;
}

}  // namespace depbench
