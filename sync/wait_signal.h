#pragma once
// WaitSignal: a one-shot event a frontend thread sleeps on while the engine
// works: spin briefly (the answer is often microseconds away), then sleep in
// the kernel, so a waiting frontend uses no CPU.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>

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
    while (done_.load(std::memory_order_acquire) == 0) {
      slept_ = true;
      done_.wait(0, std::memory_order_acquire);
    }
    return error_;
  }
  /// Whether wait() went to sleep (a woken thread may find itself moved).
  bool slept() const { return slept_; }

 private:
  std::atomic<std::uint32_t> done_{0};
  std::exception_ptr error_;
  bool slept_ = false;  // the waiting thread's own
};

}  // namespace depengine::detail
