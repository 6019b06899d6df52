#pragma once
// FlushTimer: a thread that bounds how long a pushed operation may wait in a
// PushBuffer when nothing else flushes it (its frontend stopped pushing
// without a blocking call while every running worker is busy). Armed by a
// frontend whose buffer stops being empty; while armed it calls `tick`
// every period; it disarms, and sleeps without a timeout, once a tick finds
// every buffer empty. An idle engine therefore costs it nothing.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace depengine::detail {

class FlushTimer {
 public:
  /// `tick` flushes what waited long enough and returns whether operations
  /// are still buffered anywhere.
  FlushTimer(std::chrono::microseconds period, std::function<bool()> tick);
  ~FlushTimer();
  FlushTimer(const FlushTimer&) = delete;
  FlushTimer& operator=(const FlushTimer&) = delete;

  /// A buffer stopped being empty (after its lock was released: a tick that
  /// disarms looks at every buffer under its lock, so either it sees the
  /// operation or this call sees the timer disarmed).
  void arm() {
    if (!armed_.load(std::memory_order_seq_cst)) wake();
  }

 private:
  void wake();
  void run();

  const std::chrono::microseconds period_;
  const std::function<bool()> tick_;
  std::atomic<bool> armed_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace depengine::detail
