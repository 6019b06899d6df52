#pragma once
// The ideal speedup of a workload, from the measured durations of its
// operations: an asynchronous run can be no shorter than the longest chain
// of dependent operations (the critical path), nor than the total work
// spread over every worker. So
//
//   ideal = work / max(critical path, work / workers)
//
// which is, for two independent halves, (a + b) / max(a, b); for a copy
// pipeline, (copy + compute) / max(copy, compute) plus the pipeline's ends.

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <depengine/var.h>

namespace depbench {

class OpTimes {
 public:
  /// Registers an op (in push order) with the variables it reads and
  /// writes; the returned slot receives its measured duration.
  double* add(depengine::VarList reads, depengine::VarList writes, std::string resource = "cpu");
  /// The same with variables as the profiler identifies them (ProfiledOp::read_ids).
  double* add(const std::vector<std::uint64_t>& reads, const std::vector<std::uint64_t>& writes,
              std::string resource = "cpu");

  double work() const;
  double critical_path() const;
  /// work / max(critical path, work per worker of each resource). Ops on a
  /// resource other than "cpu" (a device stream) do not share its workers.
  double ideal_speedup(int cpu_workers) const;

 private:
  struct Op {
    std::vector<std::string> reads, writes;
    std::string resource;
    double seconds = 0;
  };
  double* add_keys(std::vector<std::string> reads, std::vector<std::string> writes, std::string resource);

  std::deque<Op> ops_;  // a deque: slots handed out stay valid as it grows
};

/// Runs `fn` and stores its duration in `*slot` (when not null).
template <class F>
void timed(double* slot, F&& fn) {
  if (slot == nullptr) {
    fn();
    return;
  }
  const auto begin = std::chrono::steady_clock::now();
  fn();
  *slot = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

}  // namespace depbench
