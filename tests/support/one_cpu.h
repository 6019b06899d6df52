#pragma once
// OnOneCpu: for tests of what the engine counts under a narrow affinity mask
// (taskset, a container's cpuset, mpirun's binding). While it lives, the
// calling thread may run on one CPU of the mask it had (threads it starts
// inherit that); the mask comes back when it ends.

#include <sched.h>

class OnOneCpu {
 public:
  OnOneCpu() {
    if (sched_getaffinity(0, sizeof before_, &before_) != 0 || CPU_COUNT(&before_) < 2) return;
    while (!CPU_ISSET(cpu_, &before_)) ++cpu_;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu_, &one);
    confined_ = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~OnOneCpu() {
    if (confined_) sched_setaffinity(0, sizeof before_, &before_);
  }
  OnOneCpu(const OnOneCpu&) = delete;
  OnOneCpu& operator=(const OnOneCpu&) = delete;

  /// False where the mask held one CPU already, or could not be changed.
  bool confined() const { return confined_; }
  /// Another CPU of the mask the thread had (when confined()).
  int other_cpu() const {
    int cpu = cpu_ + 1;
    while (!CPU_ISSET(cpu, &before_)) ++cpu;
    return cpu;
  }

 private:
  cpu_set_t before_{};
  int cpu_ = 0;
  bool confined_ = false;
};
