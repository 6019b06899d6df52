#pragma once
// WorkerThreads: the CPU device's own threads, on which its elastic worker
// tasks run (CpuExecutor starts one task per worker).
//
// A thread whose task returned looks for the next one for a bounded spin
// that yields its core each round, which on a quiet machine picks the next
// task up at once and leaves the core to any thread that wants it; then it
// sleeps on a condition variable until a task comes. Beside a thread that
// never blocks, a yield hands that thread a whole time slice (4 ms at
// 250 Hz): the round reads as a lost core (SpinWait) and the idle thread
// goes to sleep, so that a task enqueued later wakes it with the
// scheduler's credit for sleepers. oneTBB's arena, which ran the tasks
// before, kept yielding there, and every task enqueued waited for a slice:
// depbench's training_step with one worker beside two busy loops ran 8x
// slower in half the processes. These threads judge their lost cores on
// their own (a Contention and spinner slots of their own): an idle thread
// between tasks says nothing about the engine's other waits.
//
//   WorkerThreads threads(2);
//   threads.enqueue([] { /* a worker's loop */ });

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "sync/spin_wait.h"

namespace depengine::detail {

class WorkerThreads {
 public:
  using Task = std::function<void()>;

  /// `threads`: how many tasks may run at once.
  explicit WorkerThreads(int threads);
  /// Joins the threads once every enqueued task has run.
  ~WorkerThreads();
  WorkerThreads(const WorkerThreads&) = delete;
  WorkerThreads& operator=(const WorkerThreads&) = delete;

  /// Runs `task` on a free thread: one looking for work takes it within a
  /// spin round, a sleeping one is woken.
  void enqueue(Task task);

 private:
  void run();
  /// The oldest queued task, if any (mutex_ held).
  bool take(Task& task);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> tasks_;      // guarded by mutex_
  int sleepers_ = 0;            // guarded by mutex_
  bool stop_ = false;           // guarded by mutex_
  std::atomic<int> queued_{0};  // tasks_.size(), for threads that look without the lock
  SpinnerSlots spinners_;
  Contention contention_;
  std::vector<std::thread> threads_;
};

}  // namespace depengine::detail
