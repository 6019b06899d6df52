#pragma once
// BatchThread<Item>: a host thread that handles the items queued on it one at
// a time, in queue order, taking everything queued in one go (one lock per
// batch; both vectors keep their capacity, so a busy thread allocates
// nothing), and sleeps on a condition variable when there is nothing.
//
// `idle_spin`: how long the thread keeps looking for items after its queue ran
// empty before it sleeps. While a producer hands items over faster than that,
// it never has to wake the thread (a system call on the producer's thread per
// item); the spin is bounded, so an idle thread still uses no CPU.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "sync/spin_wait.h"

namespace depengine::detail {

template <class Item, class Handler>
class BatchThread {
 public:
  BatchThread(Handler handler, std::chrono::nanoseconds idle_spin)
      : handler_(std::move(handler)), idle_spin_(idle_spin), thread_([this] { loop(); }) {}
  /// Handles what is still queued, then joins the thread.
  ~BatchThread() { stop(); }
  BatchThread(const BatchThread&) = delete;
  BatchThread& operator=(const BatchThread&) = delete;

  /// Queues `item` behind everything queued before. Never blocks on handling.
  void enqueue(Item item) {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(item));
      wake = sleeping_;
      sleeping_ = false;
    }
    queued_.store(true, std::memory_order_release);
    if (wake) cv_.notify_one();
  }

  /// Handles what is queued, then ends the thread. Idempotent.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  void loop() {
    std::vector<Item> batch;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        if (queue_.empty() && !stopping_ && idle_spin_.count() > 0) {
          lock.unlock();
          spin_for_items();
          lock.lock();
        }
        while (queue_.empty() && !stopping_) {
          sleeping_ = true;
          cv_.wait(lock);
        }
        if (queue_.empty()) return;
        batch.swap(queue_);
        // A stale `true` from an enqueue of this batch only costs one look.
        queued_.store(false, std::memory_order_relaxed);
      }
      for (Item& item : batch) handler_(item);
      batch.clear();
    }
  }

  void spin_for_items() {
    SpinWait spin(idle_spin_, SpinWait::kNeverYield);
    while (!queued_.load(std::memory_order_acquire) && spin.round()) {
    }
  }

  Handler handler_;
  const std::chrono::nanoseconds idle_spin_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Item> queue_;  // swapped out whole by the thread
  std::atomic<bool> queued_{false};  // a hint for the spin; the queue decides
  bool sleeping_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace depengine::detail
