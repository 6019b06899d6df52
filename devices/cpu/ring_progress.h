#pragma once
// RingProgress: when a CPU worker may take the ready ops another worker
// queued.
//
// A worker that completes an op runs one successor itself and queues the
// others it made ready; their inputs were just written on its core. Taken
// by another worker at once, an op first moves that data between cores: in
// the MLP's backward pass a bias gradient's sum (32 KiB) took 3.7 us on the
// other core against 0.4 us on its own, and two workers ran training_step
// slower than one. So the others take a share of such a ring only once
// nobody has popped from it for a while (tuning::kStealDelay, about what
// moving the data costs): an owner busy with a long op, or descheduled,
// costs at most that delay per share, and each share taken restarts the
// wait, so that the owner keeps the rest if it comes back meanwhile.
//
// The watch lives with the ring, not with each consumer: whoever looks
// first starts it, so that any number of rings and consumers make progress.
// Races between consumers only restart or shorten a watch.

#include <atomic>
#include <chrono>
#include <cstdint>

#include "sync/spin_wait.h"

namespace depengine::detail {

class RingProgress {
 public:
  /// Counts a pop from the ring; called by the one consumer holding it.
  void popped() { pops_.store(pops_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

  /// Whether a consumer other than the owner, looking at `now`, may take a
  /// share of the ring's ops: once no pop happened for `delay` since some
  /// consumer first saw the current count.
  bool may_take(SpinClock::time_point now, std::chrono::nanoseconds delay) {
    const std::uint64_t pops = pops_.load(std::memory_order_relaxed);
    const std::int64_t ticks = now.time_since_epoch().count();
    if (seen_pops_.load(std::memory_order_relaxed) != pops) {
      seen_pops_.store(pops, std::memory_order_relaxed);
      seen_since_.store(ticks, std::memory_order_relaxed);
      return delay.count() <= 0;
    }
    const SpinClock::duration waited(ticks - seen_since_.load(std::memory_order_relaxed));
    return waited >= delay;
  }

 private:
  std::atomic<std::uint64_t> pops_{0};
  std::atomic<std::uint64_t> seen_pops_{~std::uint64_t{0}};
  std::atomic<std::int64_t> seen_since_{0};  // SpinClock ticks
};

}  // namespace depengine::detail
