#include "engine/flush_timer.h"

namespace depengine::detail {

FlushTimer::FlushTimer(std::chrono::microseconds period, std::function<bool()> tick)
    : period_(period), tick_(std::move(tick)), thread_([this] { run(); }) {}

FlushTimer::~FlushTimer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_one();
  thread_.join();
}

void FlushTimer::wake() {
  {
    std::lock_guard lock(mutex_);
    armed_.store(true, std::memory_order_seq_cst);
  }
  changed_.notify_one();
}

void FlushTimer::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || armed_.load(std::memory_order_seq_cst); });
    if (changed_.wait_for(lock, period_, [&] { return stopping_; })) return;
    lock.unlock();
    if (!tick_()) {
      armed_.store(false, std::memory_order_seq_cst);
      // An operation buffered while this tick looked elsewhere, by a
      // frontend that still saw the timer armed.
      if (tick_()) armed_.store(true, std::memory_order_seq_cst);
    }
    lock.lock();
  }
}

}  // namespace depengine::detail
