#pragma once
// A lock for the short critical sections of dependency tracking (a few
// pointer updates). Spins briefly (SpinWait), then sleeps on the lock word,
// so a preempted holder never makes others burn a core.

#include <atomic>
#include <cstdint>

#include "sync/spin_wait.h"
#include "sync/tuning.h"

namespace depengine::detail {

class SpinLock {
 public:
  void lock() {
    if (!try_lock()) lock_slow();
  }
  // Only ever Free -> Locked: overwriting Contended would lose the mark that
  // a sleeper needs waking (a lost wake-up).
  bool try_lock() {
    std::uint32_t expected = kFree;
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }
  /// Whether some thread holds the lock (a hint: it may change at once).
  bool held() const { return state_.load(std::memory_order_relaxed) != kFree; }
  void unlock() {
    if (state_.exchange(kFree, std::memory_order_release) == kContended) {
      state_.notify_one();
    }
  }

 private:
  static constexpr std::uint32_t kFree = 0, kLocked = 1, kContended = 2;

  void lock_slow() {
    {
      SpinWait spin(tuning::kSpinLockSpin, SpinWait::kNeverYield);
      while (spin.round()) {
        if (state_.load(std::memory_order_relaxed) == kFree && try_lock()) return;
      }
    }
    // Announce a sleeper; whoever unlocks a contended lock wakes one. A
    // thread that gets the lock here keeps it marked Contended, since other
    // sleepers may remain.
    while (state_.exchange(kContended, std::memory_order_acquire) != kFree) {
      state_.wait(kContended, std::memory_order_relaxed);
    }
  }

  std::atomic<std::uint32_t> state_{kFree};
};

}  // namespace depengine::detail
