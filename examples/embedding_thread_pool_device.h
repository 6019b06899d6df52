#pragma once
// A custom device for depengine: operations placed on it run on a thread
// pool that the embedding framework already owns, instead of on the engine's
// oneTBB workers. Used by examples/embedding_custom_device.cpp and by
// tests/embedding_custom_device_test.cpp; docs/embedding.md walks through it.
//
//   FrameworkThreadPool pool(4);                          // the framework's own
//   depengine::Engine engine;
//   engine.add_device(depengine::Device::custom(0), std::make_unique<ThreadPoolExecutor>(pool));
//   engine.push(fn, {x}, {y}, {.device = depengine::Device::custom(0)});

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <depengine/executor.h>

/// Stands for the framework's existing pool: a fixed set of threads and a
/// FIFO of jobs. Nothing in it knows about depengine.
class FrameworkThreadPool {
 public:
  explicit FrameworkThreadPool(std::size_t threads) {
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~FrameworkThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : workers_) t.join();
  }
  FrameworkThreadPool(const FrameworkThreadPool&) = delete;
  FrameworkThreadPool& operator=(const FrameworkThreadPool&) = delete;

  void post(std::function<void()> job) {
    // Notify under the lock: the job may complete an operation whose waiter
    // then destroys this pool, which must not happen while `post` still
    // touches it.
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
    ready_.notify_one();
  }

  /// True when called on one of this pool's threads.
  bool on_pool_thread() const {
    for (const auto& t : workers_) {
      if (t.get_id() == std::this_thread::get_id()) return true;
    }
    return false;
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, and every job ran
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

/// The depengine side: an Executor that hands every ready operation to the
/// pool. `submit` only posts, so it never blocks on computation, as the
/// engine requires; `run_and_complete` runs the operation and reports its end
/// (for a push_async operation, only starts it: its Completion reports).
class ThreadPoolExecutor : public depengine::Executor {
 public:
  explicit ThreadPoolExecutor(FrameworkThreadPool& pool) : pool_(pool) {}

  void submit(depengine::ReadyOp op) override {
    pool_.post([op] {
      depengine::RunContext ctx{.device = op.device(), .property = op.property(), .name = op.name()};
      op.run_and_complete(ctx);
    });
  }

 private:
  FrameworkThreadPool& pool_;  // owned by the framework; must outlive the engine
};
