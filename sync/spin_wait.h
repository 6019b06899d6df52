#pragma once
// SpinWait: the one waiting policy of every engine thread that waits for
// another — a worker for work, a frontend for room or for completion, a
// device thread for items (docs/architecture.md, "Waiting"). Spinning pays
// only while the thread waited for is running on another core; on a machine
// with fewer free cores than the engine has threads, a spinner takes the core
// that thread needs. So a spin stops, and its caller blocks, when
//
// - its time budget is spent (budgets are times, not counts: a pause or a
//   yield costs what the machine makes it cost);
// - it lost its core: a round took far longer than a round does, so another
//   thread ran on this core. Every engine thread of the process then skips
//   spinning for a while (Contention), doubling the while on each loss in a
//   row, so that a busy neighbour is probed rarely;
// - more threads of the process would spin than it has cores (SpinnerSlots):
//   an engine with more threads than cores, or several engines, would
//   otherwise spin them all.
//
//   SpinWait spin(tuning::kWorkerIdleSpin, SpinWait::kYieldEvery8);
//   while (!ready() && spin.round()) {}
//   if (!ready()) block();

#include <atomic>
#include <chrono>
#include <cstdint>

#include "sync/cpu_relax.h"

namespace depengine::detail {

using SpinClock = std::chrono::steady_clock;

/// What a round's length says about the spinner's core.
enum class RoundVerdict { keep_spinning, budget_spent, lost_core };

/// `previous` and `now`: the clock before and after the round.
RoundVerdict judge_round(SpinClock::time_point previous, SpinClock::time_point now, SpinClock::time_point deadline);

/// Whether the process's engine threads have lately lost their cores to
/// other threads. Times are passed in, so that tests can use their own.
class Contention {
 public:
  bool active(SpinClock::time_point now) const;
  /// A spinner lost its core at `now`: no spinning for the hold, which
  /// doubles on every loss before a spin that completed without one.
  void lost_core(SpinClock::time_point now);
  /// A spin ran to its end (or to its answer) on its own core.
  void kept_core();
  /// Losses since the start.
  std::uint64_t losses() const { return losses_.load(std::memory_order_relaxed); }

  static Contention& process();

 private:
  std::atomic<std::int64_t> until_{0};  // SpinClock ticks
  std::atomic<int> losses_in_a_row_{0};
  std::atomic<std::uint64_t> losses_{0};
};

/// Counts the threads of the process that spin at once.
class SpinnerSlots {
 public:
  explicit SpinnerSlots(int capacity) : capacity_(capacity) {}
  bool try_take();
  void release() { taken_.fetch_sub(1, std::memory_order_relaxed); }
  int taken() const { return taken_.load(std::memory_order_relaxed); }

  /// As many as the cores the process may use (none on a single core).
  static SpinnerSlots& process();

 private:
  const int capacity_;
  std::atomic<int> taken_{0};
};

class SpinWait {
 public:
  static constexpr unsigned kNeverYield = 0;
  static constexpr unsigned kYieldEvery8 = 8;
  static constexpr unsigned kYieldEachRound = 1;

  /// `yield_every`: every this many rounds a round yields the core instead
  /// of pausing (a thread we wait for may be queued behind us on it).
  SpinWait(std::chrono::nanoseconds budget, unsigned yield_every,
           Contention& contention = Contention::process(), SpinnerSlots& slots = SpinnerSlots::process());
  ~SpinWait();
  SpinWait(const SpinWait&) = delete;
  SpinWait& operator=(const SpinWait&) = delete;

  /// Waits one round (well under a microsecond, or a yield); false when the
  /// caller should stop spinning and block.
  bool round() {
    return round([] { return false; });
  }
  /// The same, cut short as soon as `arrived()` (a look at one line the
  /// caller owns, between pauses) is true: what the caller waits for may
  /// come with a single store, seen within a pause instead of a round.
  template <typename Arrived>
  bool round(Arrived&& arrived) {
    if (!spinning_) return false;
    ++rounds_;
    if (yield_every_ != kNeverYield && rounds_ % yield_every_ == 0) {
      yield();
    } else {
      for (int i = 0; i < kPausesPerRound && !arrived(); ++i) cpu_relax();
    }
    return judge();
  }
  /// The clock as the last round ended (read once per round anyway).
  SpinClock::time_point round_end() const { return previous_; }

 private:
  static constexpr int kPausesPerRound = 16;  // about 0.2-0.4 µs: the clock costs a tenth to a third

  static void yield();
  // Ends a round: whether to go on, from how long it took.
  bool judge();

  Contention& contention_;
  SpinnerSlots& slots_;
  const unsigned yield_every_;
  unsigned rounds_ = 0;
  bool spinning_ = false;  // holds a slot, and may go on
  bool lost_core_ = false;
  SpinClock::time_point previous_;
  SpinClock::time_point deadline_;
};

}  // namespace depengine::detail
