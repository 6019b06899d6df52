#pragma once
// ProgressWatch: whether the threads a spinner waits for are at work, from a
// count they raise as they work (the engine's completed operations). A spin
// pays only while they run; when the count stood still for a whole window,
// they are not running — descheduled, often queued behind the spinner on its
// own core — and the spinner should stop: do the work itself, or block and
// leave the core to them (docs/architecture.md, "Waiting").
//
//   SpinWait spin(budget, SpinWait::kNeverYield);
//   ProgressWatch workers(completed(), SpinClock::now(), tuning::kStallWindow);
//   while (!ready() && spin.round() && workers.moving(completed, spin.round_end())) {}
//   if (workers.stalled()) run_it_here();
//
// The decision is on times and counts passed in, so tests use their own.

#include <chrono>
#include <cstdint>

#include "sync/spin_wait.h"

namespace depengine::detail {

class ProgressWatch {
 public:
  ProgressWatch(std::uint64_t count, SpinClock::time_point now, std::chrono::nanoseconds window)
      : window_(std::chrono::duration_cast<SpinClock::duration>(window)), last_(count), since_(now) {}

  /// False once `count()` has not moved over a window: it is read at most
  /// once a window (it may sum several lines), and compared with the last.
  template <typename Count>
  bool moving(Count&& count, SpinClock::time_point now) {
    if (stalled_) return false;
    if (now - since_ < window_) return true;
    const std::uint64_t seen = count();
    if (seen == last_) {
      stalled_ = true;
      return false;
    }
    last_ = seen;
    since_ = now;
    return true;
  }
  /// Whether moving() found the count standing still.
  bool stalled() const { return stalled_; }
  /// The count as moving() last read it (where it stood still, once stalled()).
  std::uint64_t count() const { return last_; }

 private:
  const SpinClock::duration window_;
  std::uint64_t last_;
  SpinClock::time_point since_;
  bool stalled_ = false;
};

}  // namespace depengine::detail
