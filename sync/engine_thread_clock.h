#pragma once
// EngineThreadClock: the CPU time of the threads that work for an engine —
// its workers, and the frontends that push to it — apart from the other
// threads of the process, which to the engine are neighbours like other
// processes (a data loader, an interpreter, a benchmark's busy threads).
//
// Each such thread enlists itself once (on its first push, or as it starts
// a worker task); its time is read from its own CPU-time clock, and a
// thread that ends adds its last reading to a total first.
//
//   EngineThreadClock::enlist();                     // on the engine's threads
//   std::optional<double> s = EngineThreadClock::seconds();
//
// Linux's per-thread clocks (pthread_getcpuclockid); elsewhere none is read.

#include <optional>

namespace depengine::detail {

class EngineThreadClock {
 public:
  /// Counts the calling thread's CPU time from now on; once per thread
  /// (later calls cost a thread-local load).
  static void enlist() {
    if (!t_enlisted) enlist_slow();
  }
  /// CPU seconds the enlisted threads have spent, those that ended
  /// included; none where a clock cannot be read.
  static std::optional<double> seconds();

 private:
  static void enlist_slow();
  static inline thread_local bool t_enlisted = false;
};

}  // namespace depengine::detail
