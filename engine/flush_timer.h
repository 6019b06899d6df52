#pragma once
// FlushTimer: a thread that bounds how long a pushed operation may wait in a
// PushBuffer when nothing else flushes it (its frontend stopped pushing
// without a blocking call while every running worker is busy). Armed by a
// frontend whose buffer stops being empty, or by ops waiting for a worker
// (held ops, ops left to the active workers); while armed it calls `tick`
// every period; it disarms, and sleeps without a timeout, once a tick finds
// nothing pending. An idle engine therefore costs it nothing.
//
// While ticks find operations waiting but nothing to flush (registrations
// keep coming: a frontend streams), the period doubles up to a maximum:
// each tick wakes this thread on a core that a frontend or worker is using.
// A tick that flushes, and disarming, bring the period back to the base.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace depengine::detail {

class FlushTimer {
 public:
  struct Tick {
    bool pending = false;  // operations are still buffered somewhere
    bool flushed = false;  // the tick flushed some
  };
  /// `tick` flushes what waited long enough and says what it found.
  FlushTimer(std::chrono::microseconds period, std::chrono::microseconds max_period, std::function<Tick()> tick);
  ~FlushTimer();
  FlushTimer(const FlushTimer&) = delete;
  FlushTimer& operator=(const FlushTimer&) = delete;

  /// A buffer stopped being empty (after its lock was released: a tick that
  /// disarms looks at every buffer under its lock, so either it sees the
  /// operation or this call sees the timer disarmed).
  void arm() {
    if (!armed_.load(std::memory_order_seq_cst)) wake();
  }

  /// The period after `tick`, which followed `current` (base .. max).
  static std::chrono::microseconds next_period(std::chrono::microseconds current, Tick tick,
                                               std::chrono::microseconds base, std::chrono::microseconds max) {
    if (!tick.pending || tick.flushed) return base;
    return std::min(2 * current, max);
  }

 private:
  void wake();
  void run();

  const std::chrono::microseconds base_period_;
  const std::chrono::microseconds max_period_;
  const std::function<Tick()> tick_;
  std::atomic<bool> armed_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace depengine::detail
