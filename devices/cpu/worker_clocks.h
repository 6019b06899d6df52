#pragma once
// WorkerClocks: the CPU time of one CPU executor's worker tasks, apart from
// every other thread of the process, and whether they are all asleep. A
// frontend that waits for a burst of held ops tells workers in a long op
// (this time grew through the wait, or they sleep in an op that waits for
// something else) from workers off their cores (neither) by them
// (engine/held_ops.h). The process's EngineThreadClock would not do: it also
// counts the frontends and workers of other engines, and oneTBB's threads
// that once ran a worker and now spin in oneTBB's idle loop.
//
// Each worker task registers its thread (its CPU clock, its id) as it
// begins and takes it out as it ends, adding what it spent meanwhile to a
// total.
//
//   const int slot = clocks.enter();   // a worker task begins
//   ...                                // its ops
//   clocks.leave(slot);                // it ends
//   std::optional<double> s = clocks.seconds();
//   bool asleep = clocks.all_asleep();
//
// Linux's per-thread clocks (pthread_getcpuclockid) and thread states
// (/proc/self/task/<id>/stat); elsewhere none is read.

#include <mutex>
#include <optional>
#include <vector>

#include <time.h>

namespace depengine::detail {

class WorkerClocks {
 public:
  WorkerClocks() = default;
  WorkerClocks(const WorkerClocks&) = delete;
  WorkerClocks& operator=(const WorkerClocks&) = delete;

  /// Counts the calling thread's CPU time from now until leave(); returns
  /// the slot to give back (-1: its clock cannot be read, nothing counted).
  int enter();
  /// The task in `slot` ends: its time since enter() joins the total.
  void leave(int slot);
  /// CPU seconds the tasks spent between their enter() and leave(), those
  /// running now included; none where a clock cannot be read.
  std::optional<double> seconds() const;
  /// Whether every task that is in (one at least) sleeps now, none
  /// runnable: in an op that waits, or parked. A few system calls per task;
  /// false where a state cannot be read.
  bool all_asleep() const;

 private:
  struct Slot {
    clockid_t clock{};
    int thread = 0;  // the kernel's id
    double at_enter_s = 0;
    bool used = false;
  };

  mutable std::mutex mutex_;
  std::vector<Slot> slots_;  // grows to the most tasks at once
  double ended_s_ = 0;
};

}  // namespace depengine::detail
