#include "bench/depbench/capacity.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>

namespace depbench {
namespace {

constexpr double kIntMax = std::numeric_limits<int>::max();

std::string number(double x, int digits = 3) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*g", digits, x);
  return text;
}

std::string size_text(double size) { return number(size, 6); }

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 6) {
    bytes /= 1024;
    ++unit;
  }
  return number(bytes) + " " + units[unit];
}

double peak_bytes(const Footprint& f, bool traced) { return f.host_bytes + (traced ? f.ops * kTracedBytesPerOp : 0); }

// Why `planned` does not fit at `size`: one line per scenario that does not.
std::string violations(const Config& config, const std::vector<PlannedScenario>& planned, const Machine& machine) {
  std::string why;
  for (const PlannedScenario& p : planned) {
    const Footprint f = p.scenario->footprint(config);
    std::string line;
    for (const auto& [what, count] : f.int_counts) {
      if (!(count <= kIntMax)) {
        line = "its " + what + " would be " + number(count) + ", more than an int holds (" +
               std::to_string(std::numeric_limits<int>::max()) + ")";
        break;
      }
    }
    if (line.empty()) {
      const double bytes = peak_bytes(f, p.traced);
      if (!(bytes <= machine.memory_bytes)) {
        line = "one run would hold " + bytes_text(bytes) + (p.traced ? " (with its trace)" : "") +
               ", more than this machine's " + bytes_text(machine.memory_bytes) + " of physical memory";
      }
    }
    if (!line.empty()) why += "  " + p.scenario->name() + ": " + line + "\n";
  }
  return why;
}

}  // namespace

Machine Machine::this_one() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
  // Unknown (a sandbox hiding it): no memory bound, the int bounds still hold.
  if (pages <= 0 || page_size <= 0) return {.memory_bytes = std::numeric_limits<double>::infinity()};
  return {.memory_bytes = static_cast<double>(pages) * static_cast<double>(page_size)};
}

std::string size_too_large(const Config& config, const std::vector<PlannedScenario>& planned, const Machine& machine) {
  const std::string why = violations(config, planned, machine);
  if (why.empty()) return "";
  // Every footprint grows with the size: bisect (in log scale) for the
  // largest one that fits, rounded down to three digits for the message.
  Config probe = config;
  double fits = 1e-9, too_large = config.size;
  probe.size = fits;
  if (!violations(probe, planned, machine).empty()) {
    return "--size " + size_text(config.size) + " is too large for this machine:\n" + why +
           "and these scenarios do not fit here at any size";
  }
  for (int i = 0; i < 200 && too_large / fits > 1 + 1e-6; ++i) {
    probe.size = std::sqrt(fits) * std::sqrt(too_large);
    (violations(probe, planned, machine).empty() ? fits : too_large) = probe.size;
  }
  const double digits = std::pow(10.0, std::floor(std::log10(fits)) - 2);
  const double largest = std::floor(fits / digits) * digits;
  return "--size " + size_text(config.size) + " is too large for this machine:\n" + why +
         "the largest --size at which these scenarios fit here is " + size_text(largest);
}

}  // namespace depbench
