#pragma once
// A lock for the short critical sections of dependency tracking (a few
// pointer updates). Spins for a bounded number of rounds, then sleeps on the
// lock word, so a preempted holder never makes others burn a core.

#include <atomic>
#include <cstdint>

#include "engine/cpu_relax.h"

namespace depengine::detail {

class SpinLock {
 public:
  void lock() {
    if (!state_.exchange(kLocked, std::memory_order_acquire)) return;
    lock_slow();
  }
  bool try_lock() {
    return state_.load(std::memory_order_relaxed) == kFree &&
           !state_.exchange(kLocked, std::memory_order_acquire);
  }
  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kContended) {
      state_.notify_one();
    }
  }

 private:
  static constexpr std::uint32_t kFree = 0, kLocked = 1, kContended = 2;

  void lock_slow() {
    for (int i = 0; i < 128; ++i) {
      cpu_relax();
      if (state_.load(std::memory_order_relaxed) == kFree &&
          !state_.exchange(kLocked, std::memory_order_acquire)) {
        return;
      }
    }
    // Announce a sleeper; whoever unlocks a contended lock wakes one.
    while (state_.exchange(kContended, std::memory_order_acquire) != kFree) {
      state_.wait(kContended, std::memory_order_relaxed);
    }
  }

  std::atomic<std::uint32_t> state_{kFree};
};

}  // namespace depengine::detail
