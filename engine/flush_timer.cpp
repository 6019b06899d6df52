#include "engine/flush_timer.h"

namespace depengine::detail {

FlushTimer::FlushTimer(std::chrono::microseconds period, std::chrono::microseconds max_period,
                       std::function<Tick()> tick)
    : base_period_(period), max_period_(std::max(period, max_period)), tick_(std::move(tick)),
      thread_([this] { run(); }) {}

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
  std::chrono::microseconds period = base_period_;
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || armed_.load(std::memory_order_seq_cst); });
    if (changed_.wait_for(lock, period, [&] { return stopping_; })) return;
    lock.unlock();
    Tick tick = tick_();
    if (!tick.pending) {
      armed_.store(false, std::memory_order_seq_cst);
      // An operation buffered while this tick looked elsewhere, by a
      // frontend that still saw the timer armed.
      tick = tick_();
      if (tick.pending) armed_.store(true, std::memory_order_seq_cst);
    }
    period = next_period(period, tick, base_period_, max_period_);
    lock.lock();
  }
}

}  // namespace depengine::detail
