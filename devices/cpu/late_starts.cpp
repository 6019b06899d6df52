#include "devices/cpu/late_starts.h"

#include <chrono>

#include "sync/tuning.h"

namespace depengine::detail {
namespace {

std::int64_t late_ticks() {
  return std::chrono::duration_cast<SpinClock::duration>(tuning::kLateStart).count();
}

}  // namespace

void LateStarts::started(SpinClock::time_point now) {
  // Starts and arrivals that race may time a pending start from a little
  // later than it began: the way made for it comes later, nothing worse.
  if (pending_.load(std::memory_order_acquire) == 0) since_.store(ticks(now), std::memory_order_relaxed);
  pending_.fetch_add(1, std::memory_order_acq_rel);
}

bool LateStarts::arrived(SpinClock::time_point now) {
  const std::int64_t since = since_.load(std::memory_order_relaxed);
  const bool late = ticks(now) - since >= late_ticks() || last_way_.load(std::memory_order_relaxed) >= since;
  // Which start this one answers is not known: the ones still pending are
  // timed from now, which at worst notices them later.
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) > 1) since_.store(ticks(now), std::memory_order_relaxed);
  return late;
}

bool LateStarts::make_way(SpinClock::time_point now) {
  if (!pending()) return false;
  const std::int64_t t = ticks(now);
  const std::int64_t since = since_.load(std::memory_order_relaxed);
  std::int64_t last = last_way_.load(std::memory_order_relaxed);
  // Once a start is late, then once per kLateStart while it stays pending.
  const bool due = t - since >= late_ticks() && t - last >= late_ticks();
  return due && last_way_.compare_exchange_strong(last, t, std::memory_order_relaxed);
}

bool LateStarts::make_way_on_arrival(SpinClock::time_point now) {
  if (!pending()) return false;
  std::int64_t last = last_way_.load(std::memory_order_relaxed);
  return last < since_.load(std::memory_order_relaxed) &&
         last_way_.compare_exchange_strong(last, ticks(now), std::memory_order_relaxed);
}

}  // namespace depengine::detail
