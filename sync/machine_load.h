#pragma once
// MachineLoad: how many cores threads other than the engine's kept busy
// lately — what tells a busy neighbour from an engine whose own threads
// outnumber the cores.
//
// Both lose a spinner its core (sync/spin_wait.h), but they call for
// opposite answers: beside a neighbour a frontend does best to run its own
// ops, while with the engine's own threads one more than the cores it would
// take a worker's. The busy CPU time of the CPUs the process may run on
// (/proc/stat, the affinity mask's CPUs: threads elsewhere take no core
// from it) less the engine's threads' own (sync/engine_thread_clock.h) over
// a window tells them apart; the process's other threads count as
// neighbours, as other processes do. /proc/stat counts in ticks of 10 ms,
// so a window is at least kWindow long (tuning::kNeighbourWindow).
//
//   MachineLoad load;
//   load.update(SpinClock::now());         // now and then, e.g. on a lost core
//   if (load.neighbours_busy()) { ... }
//
// A verdict lasts kVerdictLife: neighbours that left are forgotten even if
// nothing samples again (the engine samples on a lost core and on the
// flush timer's ticks, which come only while it works).
//
// The arithmetic is a pure function, tested on made-up samples; the samples
// are Linux's, and elsewhere no neighbour is ever seen.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "sync/spin_wait.h"
#include "sync/tuning.h"

namespace depengine::detail {

/// CPU seconds the CPUs this process may run on spent busy, and the
/// engine's threads spent, at `when`.
struct CpuTimeSample {
  SpinClock::time_point when;
  double cpus_busy_s = 0;
  double engine_s = 0;
};

class MachineLoad {
 public:
  /// Shortest window between two samples.
  static constexpr auto kWindow = tuning::kNeighbourWindow;
  /// Other threads' average use, in cores, from which they count as busy.
  static constexpr double kBusyCores = tuning::kNeighbourCores;
  /// How long a window's verdict holds.
  static constexpr auto kVerdictLife = 5 * kWindow;
  /// The fraction of a core past a whole one that neighbour_cores() leaves out.
  static constexpr double kCoreRoundingDown = 0.25;

  MachineLoad();
  /// Takes a sample at `now` if the last one is kWindow old, and judges the
  /// window between them; several threads may call it at once.
  void update(SpinClock::time_point now);
  /// Judges the window from `a` to `b` (update's second half).
  void judge(const CpuTimeSample& a, const CpuTimeSample& b);
  /// Whether threads other than the engine's kept at least kBusyCores busy
  /// in the last window judged, if it ended at most kVerdictLife before `now`.
  bool neighbours_busy(SpinClock::time_point now) const;
  /// The same now; when the last verdict was "no" it reads no clock.
  bool neighbours_busy() const;
  /// The last verdict, however old: no clock read, for a check on every
  /// push (a read costs a good part of one). For callers whose engine
  /// updates the verdict while it works (its flush timer does).
  bool last_verdict() const { return neighbours_busy_.load(std::memory_order_relaxed); }
  /// How many cores those threads kept busy in that window, rounded up
  /// from a quarter past a whole one, at least 1 while last_verdict()
  /// holds; 0 otherwise.
  int neighbour_cores() const { return last_verdict() ? neighbour_cores_.load(std::memory_order_relaxed) : 0; }

  /// The cores threads other than the engine's kept busy on average from `a` to `b`.
  static double others_busy_cores(const CpuTimeSample& a, const CpuTimeSample& b);
  /// A sample of the CPUs this process may run on (its affinity mask) and
  /// of the engine's threads now; none where unavailable.
  static std::optional<CpuTimeSample> sample(SpinClock::time_point now);
  /// The busy ticks (user, nice, system, irq, softirq) of the CPUs whose
  /// number `counted` accepts, from /proc/stat's text; none when it has no
  /// such CPU's line.
  static std::optional<unsigned long long> busy_ticks(std::string_view proc_stat,
                                                      const std::function<bool(int)>& counted);

  static MachineLoad& process();

  /// For tests of the policies that follow the verdict: it stays `busy`
  /// (neighbours keeping `cores` cores busy), whatever the samples say,
  /// until unpin().
  void pin(bool busy, int cores = 1);
  void unpin();

 private:
  std::atomic<bool> pinned_{false};
  std::atomic<bool> sampling_{false};
  std::atomic<bool> neighbours_busy_{false};  // the last verdict
  std::atomic<int> neighbour_cores_{0};       // written before the verdict
  std::atomic<std::int64_t> judged_at_{0};  // SpinClock ticks: the end of the window judged
  CpuTimeSample last_{};  // written only by the thread holding sampling_
  bool have_last_ = false;
};

}  // namespace depengine::detail
