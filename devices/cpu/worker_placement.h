#pragma once
// WorkerPlacement: keeps the CPU workers that are active at once on
// different CPUs.
//
// A worker is woken by a thread on some CPU, and Linux often places the
// woken thread on the waker's CPU (wake-affine). There the two workers take
// turns on one CPU while another CPU idles, for milliseconds, until the
// scheduler's balancing moves one: a run of ops that could overlap is
// serialised (on the 2-core development VM, overlap_copy_compute measured
// 26-28 ms in such runs instead of 15-18). So each worker task, as it
// starts, looks at the CPUs of the engine's other active workers and, when
// it shares one, moves itself to a CPU none of them is on: its affinity set
// to that CPU alone (which migrates it before the call returns), then back
// to what it was, so that the scheduler stays free to move it later. Not
// while the engine's threads lose their cores to other threads (Contention),
// and at most one move per tuning::kWorkerMoveGap: on a busy machine
// workers start often, and moving each time cost the contended core_bench
// 20-30% with 2 workers.
//
// A frontend meets the same on its side: the worker that wakes it from a
// blocking call, or that it wakes, lands on its CPU. This kernel's
// scheduler does so on purpose while the two together would fit one CPU
// (the development VM's kernel packs such threads), and there the epoch of
// a chain of 1.5 µs ops pushed at 0.4 µs each took 2.1-2.3 ms where the
// two threads on two CPUs take 1.7 (serial: 1.9). So a frontend on an
// active worker's CPU steps off it to a CPU free of workers (step_off),
// under the same conditions as a worker. Neither moves while threads
// other than the engine's keep cores busy (sync/machine_load.h): the CPU it
// would move to is not idle either. Where none is free, the two take turns
// on one core, and the frontend registers its batches at once
// (engine/threaded_engine.cpp).
//
// The scheduler moves running threads too: after a kernel thread took a
// CPU for milliseconds, two workers went on taking turns on the other one
// while it idled again (4-5 ms at a time in depbench's data_parallel on the
// 2-core VM). So a running worker looks at its CPU now and then (recheck:
// sched_getcpu reads a word glibc keeps per thread) and moves off as it
// would on arrival; a frontend does the same between its pushes.
//
// The decision is a pure function (tested with made-up CPUs); the move is
// Linux's sched_setaffinity, and a no-op elsewhere.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "sync/spin_wait.h"

namespace depengine::detail {

class WorkerPlacement {
 public:
  explicit WorkerPlacement(int workers);

  /// For a worker task that starts on the calling thread: moves it off a
  /// CPU another active worker is on, if a free one is allowed, at most
  /// once per kWorkerMoveGap unless it started `late` (devices/cpu/
  /// late_starts.h: it waited behind that worker). Returns the slot to give
  /// back to leave() (-1: none taken).
  int arrive(bool late = false);
  /// arrive() for a worker on `cpu` at `now`, moving with `move` (move_to,
  /// or a test's stand-in; null: no move, as beside busy neighbours) among
  /// the CPUs `allowed` returns (called only when it may move).
  using Move = bool (*)(int cpu);
  using AllowedCpus = std::vector<int> (*)();
  int arrive_at(int cpu, SpinClock::time_point now, const Contention& contention, Move move, AllowedCpus allowed,
                bool late = false);
  /// For a running worker in `slot` (as arrive() returned it): records the
  /// CPU it runs on now, which the scheduler may have changed, and moves it
  /// off a CPU another active worker is on as arrive() does, at most once
  /// per kWorkerMoveGap. A no-op for slot -1.
  void recheck(int slot);
  /// recheck() for a worker on `cpu` (as arrive_at(); `now` is read only
  /// when it shares a CPU).
  using Clock = SpinClock::time_point (*)();
  void recheck_at(int slot, int cpu, Clock now, const Contention& contention, Move move, AllowedCpus allowed);
  /// For a thread that feeds the workers (a frontend): moves it off an
  /// active worker's CPU to one no worker is on, if one is allowed; with
  /// `gap`, at most once per kWorkerMoveGap counting the workers' moves.
  /// Returns whether it moved.
  bool step_off(bool gap);
  /// step_off() for a thread on `cpu` at `now` (as arrive_at()).
  bool step_off_at(int cpu, SpinClock::time_point now, bool gap, const Contention& contention, Move move,
                   AllowedCpus allowed);
  /// The CPU the worker in `slot` was last placed on (-1: slot free).
  int cpu_of(int slot) const { return cpu_of_[slot].load(std::memory_order_acquire); }
  /// Whether an active worker was last placed on `cpu`.
  bool occupied(int cpu) const;
  /// The calling thread's CPU (-1 where unknown).
  static int current_cpu();
  /// The worker task in `slot` is ending.
  void leave(int slot);

  /// Where a worker on `current` should go: -1 to stay (no other worker on
  /// `current`, or no allowed CPU free of them), else the lowest allowed
  /// CPU that none of `others` is on. `others` holds -1 for empty slots.
  static int target_cpu(int current, const std::vector<int>& others, const std::vector<int>& allowed);

  /// Moves the calling thread to `cpu` now and restores its affinity;
  /// returns whether it ran on `cpu` when the call returned.
  static bool move_to(int cpu);
  /// The CPUs the calling thread may run on, ascending.
  static std::vector<int> allowed_cpus();

 private:
  // move_to, or null while moves are ruled out on this machine now.
  static Move mover();
  // Whether a worker other than the one in `own` (-1: none) was last placed on `cpu`.
  bool shared(int cpu, int own) const;
  // Moves a thread on `cpu` that shares it with a worker other than the one
  // in `own` (-1: none) to a CPU free of them, when it may; returns the CPU
  // it moved to, or -1.
  int move_off_workers(int cpu, int own, SpinClock::time_point now, bool gap, const Contention& contention,
                       Move move, AllowedCpus allowed);

  const int slots_;
  std::unique_ptr<std::atomic<int>[]> cpu_of_;  // per slot: the CPU of its worker, -1 when free
  std::atomic<std::int64_t> last_move_{0};      // SpinClock ticks of the last move
};

}  // namespace depengine::detail
