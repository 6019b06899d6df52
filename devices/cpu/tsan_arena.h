#pragma once
// Under ThreadSanitizer, a stand-in for oneTBB's task_arena::enqueue.
//
// Debian's libtbb is not instrumented, so ThreadSanitizer cannot see the
// hand-off inside task_arena::enqueue and reports every operation as a race.
// Sanitized builds therefore run the executor's worker tasks on this plain
// pool; everything else in the CPU executor (ready queue, elastic workers,
// inline continuation, idling) is the same code as in a normal build.

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace depengine::detail {

class TsanArena {
 public:
  explicit TsanArena(int threads, int /*reserved_for_masters*/ = 0) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  ~TsanArena() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void enqueue(std::function<void()> task) {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    wake_.notify_one();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      auto task = std::move(tasks_.back());
      tasks_.pop_back();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace depengine::detail
