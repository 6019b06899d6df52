#pragma once
// ShortLock: for sections of a few dozen instructions that one thread takes
// almost every time (a PushBuffer's owner, once per push). Unlocking is a
// plain store where SpinLock's is an atomic exchange (it must learn whether
// to wake a sleeper): the owner pays one atomic instruction per section, not
// two. Nobody sleeps on it: a waiter spins briefly (SpinWait), then yields
// its core, which on a busy machine may be the holder's.

#include <atomic>
#include <thread>

#include "sync/spin_wait.h"
#include "sync/tuning.h"

namespace depengine::detail {

class ShortLock {
 public:
  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }
  void lock() {
    if (try_lock()) return;
    {
      SpinWait spin(tuning::kShortLockSpin, SpinWait::kNeverYield);
      while (spin.round()) {
        if (try_lock()) return;
      }
    }
    while (!try_lock()) std::this_thread::yield();
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace depengine::detail
