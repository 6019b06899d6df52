#include "bench/depbench/html_report.h"

#include <cmath>
#include <cstdio>

#include <depengine/profiler.h>

#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/svg_charts.h"
#include "bench/depbench/table.h"

namespace depbench {
namespace {

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

const char* kStyle = R"(
body { font-family: sans-serif; margin: 2em; max-width: 1000px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 10px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.differ { color: #c00; font-weight: bold; }
figure { margin: 1.5em 0; overflow-x: auto; }
figcaption { color: #555; font-size: 0.9em; margin-top: 0.3em; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
)";

// A section with the chart `draw` makes of scenario `name`'s result; empty
// when that scenario did not run or has nothing to draw.
std::string scenario_figure(const std::vector<ScenarioResult>& results, const std::string& name,
                            std::string (*draw)(const ScenarioResult&), const std::string& heading,
                            const std::string& caption) {
  for (const ScenarioResult& r : results) {
    if (r.name != name) continue;
    const std::string chart = draw(r);
    if (chart.empty()) return "";
    return "<h2>" + heading + "</h2>\n<figure>" + chart + "<figcaption>" + caption + "</figcaption></figure>\n";
  }
  return "";
}

}  // namespace

std::string html_report(const std::vector<ScenarioResult>& results, const Config& config, const std::string& timeline) {
  std::string h =
      "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
      "<title>depbench report</title>\n<style>" +
      std::string(kStyle) + "</style>\n</head>\n<body>\n<h1>depbench: sync against async</h1>\n";
  h += "<p>Each scenario runs the same workload synchronously (the naive engine, or a blocking call after each "
       "operation) and asynchronously (the threaded engine, " +
       std::to_string(cpu_workers()) + " CPU workers), with size " + fixed(config.size, 3) + ", device " +
       xml_escape(config.device) + "; times are medians of " + std::to_string(config.repeat) +
       " run(s). The ideal speedup comes from the measured parts of the sync run.</p>\n";

  h += "<table id=\"summary\">\n<tr><th>scenario</th><th>sync s</th><th>async s</th><th>speedup</th><th>ideal</th>"
       "<th>results</th><th>what it runs</th></tr>\n";
  for (const ScenarioResult& r : results) {
    h += "<tr><td>" + xml_escape(r.name) + "</td><td>" + fixed(r.sync.seconds, 4) + "</td><td>" +
         fixed(r.async.seconds, 4) + "</td><td>" + fixed(r.speedup, 2) + "x</td><td title=\"" +
         xml_escape(r.ideal_formula) + "\">" +
         (std::isfinite(r.ideal_speedup) ? fixed(r.ideal_speedup, 2) + "x" : std::string("n/a")) + "</td><td" +
         (r.results_equal ? ">equal" : " class=\"differ\">DIFFER") + "</td><td style=\"text-align:left\">" +
         xml_escape(r.description) +
         (config.device != "cpu" && !r.on_device ? " (on the CPU whatever the device)" : "") + "</td></tr>\n";
  }
  h += "</table>\n";

  h += "<h2>Sync against async</h2>\n<figure>" + speedup_bar_chart(results) +
       "<figcaption>Time of each mode, the sync bar full width; the red mark is the async time the ideal "
       "speedup allows.</figcaption></figure>\n";

  h += scenario_figure(results, "roofline", roofline_plot, "Roofline",
                       "Measured ceilings of one worker: the matrix product's peak, and the bandwidth of a large "
                       "copy or vector add. An op left of the balance point waits on memory; right of it, on "
                       "arithmetic.");
  h += scenario_figure(results, "gradient_sync", strategy_chart, "Gradient aggregation strategies",
                       "The same gradients summed by each strategy (medians of the runs); the red mark is the "
                       "strategy's ideal: the bytes its bottleneck link carries over the measured bandwidth of "
                       "one copy stream.");

  for (const ScenarioResult& r : results) {
    if (r.name != timeline || !r.trace) continue;
    h += "<h2>Timeline of one async run: " + xml_escape(r.name) + "</h2>\n<figure>" + timeline_chart(*r.trace) +
         "<figcaption>One row per CPU worker, frontend thread or device stream; hover an operation for its "
         "variables. Open the --trace file in https://ui.perfetto.dev for the full view with "
         "arrows.</figcaption></figure>\n<pre>" +
         xml_escape(r.trace->table) + "</pre>\n";
  }
  if (!timeline.empty() && !depengine::Profiler::available()) {
    h += "<p>No timeline: this build compiled the profiler's hooks out (DEPENGINE_PROFILER_HOOKS=OFF).</p>\n";
  }
  h += "<h2>Text summary</h2>\n<pre>" + xml_escape(summary_table(results, config)) + "</pre>\n</body>\n</html>\n";
  return h;
}

}  // namespace depbench
