#include "bench/depbench/table.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/gradient_sync.h"

namespace depbench {
namespace {

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

double metric(const ModeResult& m, const std::string& name) {
  auto it = m.metrics.find(name);
  return it == m.metrics.end() ? 0 : it->second;
}

// Per strategy: both modes' times, the ideal, how far async is from it.
std::string gradient_sync_table(const ScenarioResult& r) {
  namespace gs = gradient_sync;
  std::string out = format(
      "\ngradient_sync: %.0f emulated devices x %.0f process(es), %.2f MiB of gradients in %.0f layers, link %.2f "
      "GB/s (one copy stream, measured)\n",
      metric(r.sync, "devices_per_process"), metric(r.sync, "processes"), metric(r.sync, "gradient_mib"),
      metric(r.sync, "layers"), median_metric(r.async, "link_gbs"));
  out += "  (medians of the runs; ideal: the bytes on the strategy's busiest link / the link's bandwidth; one "
         "memory: the bytes of all its links at that bandwidth, what it costs where the links take turns on one "
         "memory)\n";
  out += format("  %-14s %10s %10s %10s %12s %15s %14s\n", "strategy", "sync ms", "async ms", "ideal ms",
                "async/ideal", "bottleneck MiB", "one memory ms");
  for (const std::string& s : gs::strategies()) {
    if (!r.async.metric_runs.contains(gs::metric(s, "seconds"))) continue;
    const double async_s = median_metric(r.async, gs::metric(s, "seconds"));
    const double ideal_s = median_metric(r.async, gs::metric(s, "ideal_s"));
    out += format("  %-14s %10.3f %10.3f %10.3f %11.2fx %15.2f %14.3f\n", s.c_str(),
                  1e3 * median_metric(r.sync, gs::metric(s, "seconds")), 1e3 * async_s, 1e3 * ideal_s,
                  async_s / ideal_s, median_metric(r.async, gs::metric(s, "bottleneck_mib")),
                  1e3 * median_metric(r.async, gs::metric(s, "shared_memory_s")));
  }
  return out;
}

}  // namespace

std::string summary_table(const std::vector<ScenarioResult>& results, const Config& config) {
  std::string out = format(
      "depbench: sync (naive engine, or a blocking call after each op) against async (threaded engine, %d CPU "
      "worker%s)\nsize %g, device %s, median of %d run%s per mode\n\n",
      cpu_workers(), cpu_workers() == 1 ? "" : "s", config.size, config.device.c_str(), config.repeat,
      config.repeat == 1 ? "" : "s");
  out += format("%-22s %10s %10s %9s %9s  %s\n", "scenario", "sync s", "async s", "speedup", "ideal", "results");
  for (const ScenarioResult& r : results) {
    const std::string ideal = std::isfinite(r.ideal_speedup) ? format("%8.2fx", r.ideal_speedup) : "      n/a";
    out += format("%-22s %10.4f %10.4f %8.2fx %s  %s\n", r.name.c_str(), r.sync.seconds, r.async.seconds,
                  r.speedup, ideal.c_str(), r.results_equal ? "equal" : "DIFFER");
  }
  std::string on_cpu;
  for (const ScenarioResult& r : results) {
    if (!r.on_device) on_cpu += (on_cpu.empty() ? "" : ", ") + r.name;
  }
  if (config.device != "cpu" && !on_cpu.empty()) {
    out += format("\non the CPU whatever --device says: %s\n", on_cpu.c_str());
  }
  for (const ScenarioResult& r : results) {
    if (r.name == "roofline" && r.details.is_array()) {
      out += format("\nroofline: peak %.1f GFLOP/s per worker, bandwidth %.1f GB/s, balance %.2f FLOP/byte\n",
                    metric(r.sync, "peak_gflops"), metric(r.sync, "bandwidth_gbs"),
                    metric(r.sync, "balance_flop_per_byte"));
      out += format("  %-13s %10s %10s %8s  %s\n", "op", "FLOP/byte", "GFLOP/s", "GB/s", "bound by");
      for (const auto& op : r.details) {
        out += format("  %-13s %10.3f %10.2f %8.2f  %s\n", op["op"].get<std::string>().c_str(),
                      op["intensity"].get<double>(), op["gflops"].get<double>(), op["gbs"].get<double>(),
                      op["bound"].get<std::string>().c_str());
      }
    } else if (r.name == "gradient_sync") {
      out += gradient_sync_table(r);
    } else if (r.name == "frontend_backend") {
      out += format("\nfrontend_backend: one blocker costs %.1f us; a push %.2f us, the op itself %.2f us\n",
                    metric(r.sync, "blocker_us"), metric(r.sync, "push_us"), metric(r.sync, "op_us"));
    }
  }
  bool all_equal = true;
  for (const ScenarioResult& r : results) all_equal = all_equal && r.results_equal;
  if (!all_equal) out += "\nWARNING: some scenarios gave different results in sync and async mode\n";
  return out;
}

}  // namespace depbench
