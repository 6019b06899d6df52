#pragma once
// CpuExecutor: runs ready CPU operations on a oneTBB arena (the policy side
// of the engine: which thread runs what).
//
// Workers are elastic: a submit starts a worker task when fewer than
// `threads` are active; a worker runs operations until the queue stays empty
// for a short bounded spin, then returns its thread to oneTBB, which parks
// it. An idle engine therefore uses no CPU. After completing an operation, a
// worker runs the first CPU successor it made ready itself (inline
// continuation) instead of queueing it.

#include <atomic>
#include <memory>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include "depengine/executor.h"
#include "devices/cpu/ready_queue.h"
#if DEPENGINE_TSAN
#include "devices/cpu/tsan_arena.h"
#endif

namespace depengine {
class EngineCore;
}

namespace depengine::detail {

class CpuExecutor final : public Executor {
 public:
  CpuExecutor(EngineCore& engine, int threads);
  ~CpuExecutor() override;

  void submit(ReadyOp op) override;
  /// Queues several ready ops at once, all of priority 0 and not
  /// CpuPrioritized (the engine's path for a flushed batch).
  void submit_plain(OpBlock* const* ops, std::size_t count);
  void shutdown() override;

  /// Runs queued operations on the calling thread (a frontend about to
  /// block in wait_all) until the queue is empty; returns whether it ran any.
  /// The thread would only sleep otherwise, and ops it runs need no hand-off.
  /// Does nothing when the workers already have every core.
  bool help();

  int threads() const { return threads_; }
  /// True when there are fewer workers than cores: a thread that waits may
  /// spin or help without taking a worker's core.
  bool has_spare_core() const { return spare_core_; }
  /// True when no worker is active: a submit would have to start one.
  bool idle() const { return active_.load(std::memory_order_seq_cst) == 0; }
  /// True on a worker thread of this executor.
  bool on_worker_thread() const;

 private:
  static constexpr std::size_t kMaxBatch = 16;

  void start_worker_if_needed(std::size_t backlog);
  void worker_loop();
  void run_batch(OpBlock** batch, std::size_t count);
  void run_chain(OpBlock* op);

  EngineCore& engine_;
  const int threads_;
  std::unique_ptr<oneapi::tbb::global_control> parallelism_;
  const bool spare_core_;  // fewer workers than cores: a waiting thread may help
#if DEPENGINE_TSAN
  TsanArena arena_;
#else
  oneapi::tbb::task_arena arena_;
#endif
  ReadyQueue queue_;
  // Every submit reads active_; a worker that runs out of work writes
  // spinning_, often when it keeps pace with the frontend: apart, a submit
  // with one thread (which never reads spinning_) does not miss on it.
  alignas(64) std::atomic<int> active_{0};    // worker tasks started and not retired
  alignas(64) std::atomic<int> spinning_{0};  // of those, idly looking for work
  std::atomic<int> running_tasks_{0};         // worker tasks not yet returned
};

}  // namespace depengine::detail
