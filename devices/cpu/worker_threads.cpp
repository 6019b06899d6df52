#include "devices/cpu/worker_threads.h"

#include "sync/engine_thread_clock.h"
#include "sync/tuning.h"

namespace depengine::detail {

WorkerThreads::WorkerThreads(int threads) : spinners_(threads) {
  threads_.reserve(static_cast<std::size_t>(threads));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WorkerThreads::~WorkerThreads() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerThreads::enqueue(Task task) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    queued_.store(static_cast<int>(tasks_.size()), std::memory_order_release);
    wake = sleepers_ > 0;
  }
  // A thread looking for work takes the task without a wake-up; a wake-up
  // whose task another thread took meanwhile costs the sleeper one look.
  if (wake) wake_.notify_one();
}

bool WorkerThreads::take(Task& task) {
  if (tasks_.empty()) return false;
  task = std::move(tasks_.front());
  tasks_.pop_front();
  queued_.store(static_cast<int>(tasks_.size()), std::memory_order_release);
  return true;
}

void WorkerThreads::run() {
  // Its CPU time is the engine's between tasks too (MachineLoad).
  EngineThreadClock::enlist();
  Task task;
  for (;;) {
    {
      SpinWait spin(tuning::kWorkerThreadSpin, SpinWait::kYieldEachRound, contention_, spinners_);
      while (queued_.load(std::memory_order_acquire) == 0 && spin.round()) {
      }
    }
    {
      std::unique_lock lock(mutex_);
      while (!take(task)) {
        if (stop_) return;
        ++sleepers_;
        wake_.wait(lock);
        --sleepers_;
      }
    }
    task();
    task = nullptr;
  }
}

}  // namespace depengine::detail
