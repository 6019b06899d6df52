#pragma once
// The time a cache line takes to go from one CPU to another and back: two
// threads, pinned to the first two CPUs the process may use, hand a counter
// back and forth.
//
// On the development VMs this time has two modes: 50-80 ns most of the time,
// 320-370 ns in spells of seconds to minutes, with no steal time and the same
// single-core speed (the host runs the two vCPUs far apart). Every engine
// that hands work between cores slows down in a spell (depengine's core_bench
// workloads 2-2.5x), so a benchmark run in one says little about the engine:
// benchmarks report this time so that such runs can be told apart.
//
//   const double ns = cross_core_roundtrip_ns();  // < 0: fewer than 2 CPUs
//   std::puts(roundtrips_line(ns, cross_core_roundtrip_ns()).c_str());

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace depengine::bench {

namespace detail {

#if defined(__linux__)
// Where pinning fails the sides still meet, on whatever CPUs they get.
inline bool pin_to(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
}

// The CPUs the process may run on (its affinity mask), in order; empty
// where unknown.
inline std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  }
  return cpus;
}
#endif

// A side whose partner has not answered for this many looks yields its CPU:
// thousands of times a round trip on a machine where both run, and the
// partner may have no CPU (under valgrind, which runs one thread at a time,
// it never gets one from a spinner).
inline constexpr int kLooksBeforeYield = 4096;

}  // namespace detail

/// The fastest of `bursts` bursts of `rounds` round trips, in ns per round
/// trip: the least of several, because either thread may lose its core to
/// another for part of a burst. Bursts stop after `budget` (after the
/// first), for a machine where a round trip takes milliseconds. Negative
/// where the process may use fewer than two CPUs (or off Linux).
inline double cross_core_roundtrip_ns(int bursts = 20, int rounds = 500,
                                      std::chrono::milliseconds budget = std::chrono::milliseconds(100)) {
#if defined(__linux__)
  const std::vector<int> cpus = detail::allowed_cpus();
  if (cpus.size() < 2) return -1;
  alignas(64) std::atomic<long> ball{0};
  double best = -1;
  // Returns false once the ball says stop (negative).
  const auto wait_for = [&ball](long value) {
    for (int looks = 1;; ++looks) {
      const long seen = ball.load(std::memory_order_acquire);
      if (seen == value) return true;
      if (seen < 0) return false;
      if (looks % detail::kLooksBeforeYield == 0) std::this_thread::yield();
    }
  };
  // Each side runs on a thread of its own, so the caller's affinity stays as it was.
  std::thread pong([&] {
    detail::pin_to(cpus[1]);
    for (long next = 1; wait_for(next); next += 2) ball.store(next + 1, std::memory_order_release);
  });
  std::thread ping([&] {
    detail::pin_to(cpus[0]);
    long value = 0;
    const auto began = std::chrono::steady_clock::now();
    for (int b = 0; b < bursts && (b == 0 || std::chrono::steady_clock::now() - began < budget); ++b) {
      const auto start = std::chrono::steady_clock::now();
      for (int r = 0; r < rounds; ++r) {
        ball.store(++value, std::memory_order_release);
        wait_for(++value);
      }
      const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / rounds;
      best = best < 0 ? ns : std::min(best, ns);
    }
  });
  ping.join();
  ball.store(-1, std::memory_order_release);
  pong.join();
  return best;
#else
  (void)bursts;
  (void)rounds;
  return -1;
#endif
}

/// "Cross-core round trip, before and after<during>: B and A ns" (rounded),
/// the line a benchmark prints with its results; empty where either is
/// unknown (negative: fewer than two CPUs).
inline std::string roundtrips_line(double before_ns, double after_ns, const std::string& during = "") {
  if (before_ns < 0 || after_ns < 0) return "";
  return "Cross-core round trip, before and after" + during + ": " + std::to_string(std::lround(before_ns)) +
         " and " + std::to_string(std::lround(after_ns)) + " ns";
}

}  // namespace depengine::bench
