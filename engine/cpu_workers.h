#pragma once
// CpuWorkers: what the threaded engine asks of its CPU device beyond the
// Executor interface every device has. It is the one interface between
// engine/ and devices/cpu/, which implements it (make_cpu_workers): the
// engine decides when to register pushes from whether workers are active,
// hands a flushed batch over in one call, and lends a waiting thread.
// What it asks on every push and completion (idle, on_worker_thread) reads
// state kept in this base, without a virtual call.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "depengine/executor.h"
#include "sync/machine_load.h"
#include "sync/spin_wait.h"

namespace depengine {
class EngineCore;
}

namespace depengine::detail {

struct OpBlock;

class CpuWorkers : public Executor {
 public:
  int threads() const { return threads_; }
  /// True when there are fewer workers than cores: a thread that waits may
  /// spin or help without taking a worker's core.
  bool has_spare_core() const { return spare_core_; }
  /// Whether threads other than the engine's keep cores busy: MachineLoad
  /// says so, or the engine's threads lose cores they do not outnumber
  /// (MachineLoad judges windows of 200 ms, a lost core tells at once).
  bool beside_busy_threads() const {
    return MachineLoad::process().neighbours_busy() ||
           (spare_core_ && Contention::process().active(SpinClock::now()));
  }
  /// True when an active worker was last placed on the calling thread's
  /// CPU: there it takes turns on one core with the thread that feeds it.
  virtual bool worker_on_this_cpu() const = 0;
  /// Whether threads other than the engine's keep every core of the
  /// process busy (MachineLoad::neighbour_cores): each engine thread then
  /// shares its CPU with one of them.
  virtual bool neighbours_on_every_core() const = 0;
  /// Moves the calling thread (a frontend) off an active worker's CPU to
  /// one no worker is on, where one is allowed and the process keeps its
  /// cores; with `rate_limited`, at most as often as workers move
  /// (devices/cpu/worker_placement.h). Returns whether it moved.
  virtual bool step_off_workers(bool rate_limited) = 0;
  /// True when no worker is active: a submit would have to start one.
  bool idle() const { return active_.load(std::memory_order_seq_cst) == 0; }
  /// True on a thread running this device's ops (a worker, or a helper).
  bool on_worker_thread() const { return t_worker_of == this; }

  /// Whether ops of positive priority wait in the workers' queue (a hint:
  /// a completion continues with a ready op of priority 0 only if not).
  bool positive_priority_queued() const { return positive_queued_->load(std::memory_order_relaxed) != 0; }

  /// Queues several ready ops at once, all of priority 0 and not
  /// CpuPrioritized (the engine's path for a flushed batch).
  virtual void submit_plain(OpBlock* const* ops, std::size_t count) = 0;
  /// The same without waking a worker or handing them to an active one:
  /// they wait apart, marked unattended, for help() or attend().
  virtual void submit_unattended(OpBlock* const* ops, std::size_t count) = 0;
  /// Whether ops were queued unattended since the last attend() (a hint:
  /// true may be stale, never false wrongly once submit_unattended returned).
  bool unattended() const { return unattended_.load(std::memory_order_seq_cst); }
  /// Since when ops queued unattended had no thread to run them (help()
  /// runs them), for as long as unattended() holds.
  SpinClock::time_point unattended_since() const {
    return SpinClock::time_point(SpinClock::duration(unattended_since_.load(std::memory_order_relaxed)));
  }
  /// Hands the ops queued unattended to the workers and starts one for
  /// them, unless none are queued any longer.
  virtual void attend() = 0;
  /// Runs queued operations on the calling thread (one about to block in
  /// wait_all, which waits for them anyway) until the queue is empty;
  /// returns whether it ran any. Never from a push: a push does not wait
  /// for computation. With a worker on every core, a helper only
  /// oversubscribes them: the caller decides (has_spare_core).
  virtual bool help() = 0;
  /// Queued ops left to the active workers may wait long: those may take
  /// other work first, run ops that wait for these, or (beside busy
  /// neighbours, where no more workers are active than the cores they
  /// leave) be all the cap allows. Then EngineCore::on_cpu_watch is called,
  /// and the engine's timer calls this now and then with the engine's count
  /// of completed ops: when ops are queued and, over a
  /// tuning::kQueueWatchWindow, the active workers completed none or only
  /// long ones (tuning::kLongOp or more each: a hand-off costs a fraction of
  /// one), one more worker is started, past the cap if need be. Returns
  /// whether it still watches (false once the last worker retired).
  virtual bool watch_queue(std::uint64_t completed) = 0;
  /// CPU seconds this device's workers spent running its worker tasks (not
  /// its helpers'); none where a thread's clock cannot be read.
  virtual std::optional<double> workers_cpu_seconds() const = 0;
  /// Whether every worker task of this device sleeps now (in an op that
  /// waits, or parked), none runnable; false with none, or unknown.
  virtual bool workers_asleep() const = 0;

 protected:
  CpuWorkers(int threads, bool spare_core) : threads_(threads), spare_core_(spare_core) {}

  // Marks the calling thread as running this device's ops for as long as
  // it lives.
  class WorkerScope {
   public:
    explicit WorkerScope(const CpuWorkers* workers) : previous_(t_worker_of) { t_worker_of = workers; }
    ~WorkerScope() { t_worker_of = previous_; }
    WorkerScope(const WorkerScope&) = delete;
    WorkerScope& operator=(const WorkerScope&) = delete;

   private:
    const CpuWorkers* previous_;
  };

  const int threads_;
  const bool spare_core_;
  // Every submit reads it: a line of its own.
  alignas(64) std::atomic<int> active_{0};  // worker tasks started and not retired
  // Written by submits that leave ops unattended, read by the engine's timer.
  alignas(64) std::atomic<bool> unattended_{false};
  std::atomic<std::int64_t> unattended_since_{0};  // SpinClock ticks
  // The queue's count of ops of positive priority, set by the subclass.
  const std::atomic<int>* positive_queued_ = nullptr;

 private:
  static inline thread_local const CpuWorkers* t_worker_of = nullptr;
};

/// The CPU device of a threaded engine, with `threads` workers (defined in
/// devices/cpu/).
std::unique_ptr<CpuWorkers> make_cpu_workers(EngineCore& engine, int threads);

}  // namespace depengine::detail
