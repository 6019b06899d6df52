#pragma once
// LateStarts: notices a worker that was started (its task enqueued, or a
// parked one woken) but has not begun to run, so that a running worker
// can make way for it.
//
// Linux places a woken thread, often, on a CPU where a worker is running
// while another CPU idles: the development VM's kernel packs threads onto
// few CPUs on purpose. There the woken worker waits in the run queue until
// the running one's turn ends at a scheduler tick, 3.5-4 ms later on the
// 2-core VM (HZ=250), and the ops it was started for wait with it: in
// depbench's overlap_copy_compute and data_loading, runs took 20-28 ms
// instead of 14-17. WorkerPlacement would move it to a free CPU, but only
// once it runs. So a running worker yields its CPU, where the late worker
// may wait: between two ops, once a start has been pending for kLateStart
// and once per kLateStart after that; and as it begins, once, when another
// start is pending (workers started together were queued together). Where
// the late worker waits behind it, it runs at once and moves itself off
// (WorkerPlacement::arrive with `late`); elsewhere the yield returns at
// once. Not at every start: a yield also hands the CPU to a frontend
// queued there.
//
//   starts.started(now);                          // a submit starts a worker
//   const bool late = starts.arrived(now);        // the worker task begins
//   if (starts.make_way_on_arrival(now)) std::this_thread::yield();
//   ...                                           // before each op:
//   if (starts.pending() && starts.make_way(now)) std::this_thread::yield();
//
// A pure bookkeeping class on a clock the caller reads (tested with
// made-up times).

#include <atomic>
#include <cstdint>

#include "sync/spin_wait.h"

namespace depengine::detail {

class LateStarts {
 public:
  /// A worker was started at `now`.
  void started(SpinClock::time_point now);
  /// A started worker began to run at `now`; returns whether it was late
  /// (started kLateStart or more before).
  bool arrived(SpinClock::time_point now);
  /// Whether a started worker has not begun yet (one relaxed load: for
  /// every op a worker runs).
  bool pending() const { return pending_.load(std::memory_order_relaxed) != 0; }
  /// For a running worker between ops: true when a start has been pending
  /// for kLateStart or more and no worker made way in the last kLateStart
  /// (it claims this turn).
  bool make_way(SpinClock::time_point now);
  /// For a worker that has just begun while another start is pending (the
  /// two, started together, may have been queued on one CPU): true when no
  /// worker made way since the pending starts began (it claims this turn).
  bool make_way_on_arrival(SpinClock::time_point now);

 private:
  static std::int64_t ticks(SpinClock::time_point t) { return t.time_since_epoch().count(); }

  std::atomic<int> pending_{0};
  // SpinClock ticks: when the oldest pending start (as far as known) began,
  // and when a worker last made way.
  std::atomic<std::int64_t> since_{0};
  std::atomic<std::int64_t> last_way_{0};
};

}  // namespace depengine::detail
