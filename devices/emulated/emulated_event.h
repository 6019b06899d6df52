#pragma once
// EmulatedEvent: the point recorded behind one operation on an emulated
// stream. A stream that must run after that operation waits on it, like
// cudaStreamWaitEvent.
//
// It is signalled only once the engine has been told that the operation
// completed, so that a successor waiting on it finds a failure of the
// operation already on the variables (ReadyOp::input_error).
//
// It also settles who tells the engine: the launching thread, once it has
// reported the launch, or the stream thread, once the work ended — whichever
// comes second, so that the engine hears of the launch before the completion.
//
// Thread safety: every member may be called from any thread, except reset(),
// which the pool calls when nobody else holds the event.

#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>

namespace depengine::detail {

class EmulatedEvent {
 public:
  /// The stream thread's side: the work ended with `error`. True if the
  /// launch was already reported: the caller then reports the completion.
  bool work_done(std::exception_ptr error) {
    error_ = std::move(error);
    return settled_.fetch_add(1, std::memory_order_acq_rel) == 1;
  }
  /// The launching thread's side: the launch was reported. True if the work
  /// already ended: the caller then reports the completion.
  bool launch_reported() { return settled_.fetch_add(1, std::memory_order_acq_rel) == 1; }
  /// The work's error, for the side that reports the completion.
  std::exception_ptr take_error() { return std::move(error_); }

  void signal() {
    {
      std::lock_guard lock(mutex_);
      signalled_ = true;
    }
    cv_.notify_all();
  }

  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return signalled_; });
  }

  void reset() {
    signalled_ = false;
    error_ = nullptr;
    settled_.store(0, std::memory_order_relaxed);
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool signalled_ = false;
  std::exception_ptr error_;  // written before the settling exchange, read after it
  std::atomic<int> settled_{0};
};

}  // namespace depengine::detail
