#pragma once
// The cores this process may run on: its CPU affinity mask (taskset, a
// cgroup's cpuset), not the machine's count.

#include <sched.h>

#include <algorithm>
#include <thread>

namespace depengine::detail {

inline int usable_cores() {
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) return std::max(1, CPU_COUNT(&mask));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace depengine::detail
