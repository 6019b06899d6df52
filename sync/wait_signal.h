#pragma once
// WaitSignal: a one-shot event a frontend thread sleeps on while the engine
// works: spin briefly (the answer is often microseconds away), then sleep in
// the kernel, so a waiting frontend uses no CPU. A waiter with a core of its
// own may spin on while the workers complete ops (wait_while_progressing).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>

#include "sync/progress_watch.h"
#include "sync/spin_wait.h"
#include "sync/tuning.h"

namespace depengine::detail {

class WaitSignal {
 public:
  void set(std::exception_ptr error = nullptr) {
    error_ = std::move(error);
    done_.store(1, std::memory_order_release);
    done_.notify_one();
  }

  bool is_set() const { return done_.load(std::memory_order_acquire) != 0; }

  /// Returns the error passed to set().
  std::exception_ptr wait() {
    {
      SpinWait spin(tuning::kWaitSignalSpin, SpinWait::kNeverYield);
      while (done_.load(std::memory_order_acquire) == 0 && spin.round()) {
      }
    }
    return sleep();
  }

  /// The same, spinning for up to tuning::kProgressSpin while `completed()`
  /// (the workers' completed ops) keeps moving (ProgressWatch, windows of
  /// tuning::kProgressWindow): the awaited op is then short ops away, and
  /// a waiter woken from a sleep often starts tens of microseconds later.
  template <typename Completed>
  std::exception_ptr wait_while_progressing(Completed&& completed) {
    {
      SpinWait spin(tuning::kProgressSpin, SpinWait::kNeverYield);
      ProgressWatch workers(completed(), SpinClock::now(), tuning::kProgressWindow);
      while (done_.load(std::memory_order_acquire) == 0 && spin.round() &&
             workers.moving(completed, spin.round_end())) {
      }
    }
    return sleep();
  }

  /// Whether wait() went to sleep (a woken thread may find itself moved).
  bool slept() const { return slept_; }

 private:
  std::exception_ptr sleep() {
    while (done_.load(std::memory_order_acquire) == 0) {
      slept_ = true;
      done_.wait(0, std::memory_order_acquire);
    }
    return error_;
  }

  std::atomic<std::uint32_t> done_{0};
  std::exception_ptr error_;
  bool slept_ = false;  // the waiting thread's own
};

}  // namespace depengine::detail
