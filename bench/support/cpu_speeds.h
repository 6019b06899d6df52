#pragma once
// How fast each CPU runs a small memory-bound op right now: the MLP's relu
// over 32 x 256 floats (32 KiB in, 32 KiB out, in the core's L2), on one
// thread pinned to each CPU the process may use, all at once.
//
// On the development VMs a vCPU runs such ops at one of two speeds, about
// twice apart (0.75 or 1.5-1.7 us with AVX2), and which changes every tenth
// of a second to a few seconds, on each vCPU by itself and whatever the
// process does: the host's doing, not ours.
// A sync run (the frontend's CPU) and an async run (a worker's) of one
// process may then meet different speeds, so benchmarks report this with
// their results, as they report the cross-core round trip.
//
//   const std::vector<double> before = cpu_speeds_us();
//   ... the benchmark ...
//   std::puts(cpu_speeds_line(before, cpu_speeds_us()).c_str());

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/support/cross_core_roundtrip.h"

namespace depengine::bench {

namespace detail {

inline void relu(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = std::max(x[i], 0.0f);
}

// The median time of the op over `window`, in microseconds.
inline double relu_median_us(std::chrono::milliseconds window) {
  constexpr std::size_t kFloats = 32 * 256;
  std::vector<float> x(kFloats), y(kFloats);
  for (std::size_t i = 0; i < kFloats; ++i) x[i] = static_cast<float>(i % 3) - 1.0f;
  std::vector<double> times;
  const auto end = std::chrono::steady_clock::now() + window;
  for (auto now = std::chrono::steady_clock::now(); now < end;) {
    relu(x.data(), y.data(), kFloats);
    // The stores must happen: the compiler may not drop the op.
    asm volatile("" : : "r"(y.data()) : "memory");
    const auto after = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::micro>(after - now).count());
    now = after;
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

}  // namespace detail

/// Per CPU the process may use, in CPU order, the median microseconds of
/// the op over `window`; every CPU measured at the same time, each by a
/// thread of its own (the caller's affinity stays as it was). Empty off Linux.
inline std::vector<double> cpu_speeds_us(std::chrono::milliseconds window = std::chrono::milliseconds(20)) {
  std::vector<double> speeds;
#if defined(__linux__)
  const std::vector<int> cpus = detail::allowed_cpus();
  speeds.resize(cpus.size());
  std::vector<std::thread> probes;
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    probes.emplace_back([&, i] {
      detail::pin_to(cpus[i]);
      speeds[i] = detail::relu_median_us(window);
    });
  }
  for (std::thread& t : probes) t.join();
#else
  (void)window;
#endif
  return speeds;
}

/// "Memory-bound op per CPU (relu over 32 KiB, median us), before and
/// after: 0.76 and 0.75, 1.61 and 1.58", and how far the CPUs differ, the
/// line a benchmark prints with its results; empty where unknown.
inline std::string cpu_speeds_line(const std::vector<double>& before, const std::vector<double>& after) {
  if (before.empty() || before.size() != after.size()) return "";
  std::string line = "Memory-bound op per CPU (relu over 32 KiB, median us), before and after:";
  char part[64];
  double fastest = before[0], slowest = before[0];
  for (std::size_t i = 0; i < before.size(); ++i) {
    std::snprintf(part, sizeof(part), "%s %.2f and %.2f", i == 0 ? "" : ",", before[i], after[i]);
    line += part;
    fastest = std::min({fastest, before[i], after[i]});
    slowest = std::max({slowest, before[i], after[i]});
  }
  std::snprintf(part, sizeof(part), " (slowest %.1fx the fastest)", slowest / fastest);
  return line + part;
}

}  // namespace depengine::bench
