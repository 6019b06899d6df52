#include "sync/spin_wait.h"

#include <algorithm>
#include <thread>

#include "sync/machine_load.h"
#include "sync/tuning.h"
#include "sync/usable_cores.h"

namespace depengine::detail {

RoundVerdict judge_round(SpinClock::time_point previous, SpinClock::time_point now, SpinClock::time_point deadline) {
  if (now - previous > tuning::kLostCoreRound) return RoundVerdict::lost_core;
  if (now >= deadline) return RoundVerdict::budget_spent;
  return RoundVerdict::keep_spinning;
}

bool Contention::active(SpinClock::time_point now) const {
  return now.time_since_epoch().count() < until_.load(std::memory_order_relaxed);
}

void Contention::lost_core(SpinClock::time_point now) {
  losses_.fetch_add(1, std::memory_order_relaxed);
  // Whose threads took the core: at most one look at /proc per window (not
  // for a test's own Contention, whose times are made up).
  if (this == &process()) MachineLoad::process().update(now);
  const int losses = std::min(losses_in_a_row_.fetch_add(1, std::memory_order_relaxed), tuning::kContentionHoldDoublings);
  const auto hold = std::chrono::duration_cast<SpinClock::duration>(tuning::kContentionHold) * (1 << losses);
  const std::int64_t until = (now + hold).time_since_epoch().count();
  // Several spinners may lose their cores at once: the latest end wins.
  std::int64_t seen = until_.load(std::memory_order_relaxed);
  while (seen < until && !until_.compare_exchange_weak(seen, until, std::memory_order_relaxed)) {
  }
}

void Contention::kept_core() {
  if (losses_in_a_row_.load(std::memory_order_relaxed) != 0) losses_in_a_row_.store(0, std::memory_order_relaxed);
}

Contention& Contention::process() {
  static Contention contention;
  return contention;
}

bool SpinnerSlots::try_take() {
  int taken = taken_.load(std::memory_order_relaxed);
  while (taken < capacity_) {
    if (taken_.compare_exchange_weak(taken, taken + 1, std::memory_order_relaxed)) return true;
  }
  return false;
}

SpinnerSlots& SpinnerSlots::process() {
  // On a single core the thread waited for could only run in the spinner's place.
  static const int cores = usable_cores();
  static SpinnerSlots slots(cores == 1 ? 0 : cores);
  return slots;
}

SpinWait::SpinWait(std::chrono::nanoseconds budget, unsigned yield_every, Contention& contention, SpinnerSlots& slots)
    : contention_(contention), slots_(slots), yield_every_(yield_every) {
  if (budget.count() <= 0) return;
  previous_ = SpinClock::now();
  if (contention_.active(previous_) || !slots_.try_take()) return;
  spinning_ = true;
  deadline_ = previous_ + std::chrono::duration_cast<SpinClock::duration>(budget);
}

SpinWait::~SpinWait() {
  if (spinning_) slots_.release();
  // A spin that kept its core, to its end or to its answer, ends a run of losses.
  if (rounds_ != 0 && !lost_core_) contention_.kept_core();
}

void SpinWait::yield() { std::this_thread::yield(); }

bool SpinWait::judge() {
  const SpinClock::time_point now = SpinClock::now();
  const RoundVerdict verdict = judge_round(previous_, now, deadline_);
  previous_ = now;
  if (verdict == RoundVerdict::keep_spinning) return true;
  if (verdict == RoundVerdict::lost_core) {
    lost_core_ = true;
    contention_.lost_core(now);
  }
  spinning_ = false;
  slots_.release();
  return false;
}

}  // namespace depengine::detail
