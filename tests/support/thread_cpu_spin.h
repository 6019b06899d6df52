#pragma once
// spin_for_thread_cpu(span): for tests that need a thread to have spent CPU
// time, not wall time: it spins until the calling thread has run `span` on
// a CPU, however long a loaded machine keeps it waiting meanwhile (Linux:
// the thread's own CPU clock).

#include <chrono>

#include <time.h>

inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

inline void spin_for_thread_cpu(std::chrono::milliseconds span) {
  const double until = thread_cpu_seconds() + std::chrono::duration<double>(span).count();
  while (thread_cpu_seconds() < until) {
  }
}
