#pragma once
// CpuExecutor: runs ready CPU operations on a oneTBB arena (the policy side
// of the engine: which thread runs what).
//
// Workers are elastic: a submit starts a worker task when fewer than
// `threads` are active; a worker runs operations until the queue stays empty
// for a short bounded spin, then returns its thread to oneTBB, which parks
// it (beside busy threads it sleeps a while first, for the next submit to
// wake: ParkedWorkers). An idle engine therefore uses no CPU. After completing an operation, a
// worker runs the first CPU successor it made ready itself (inline
// continuation) instead of queueing it; the others go straight to workers
// spinning for work where there are some (WorkerMailboxes), else to the
// ready queue; those that declare data stay a while with the completing
// worker, whose cache holds their inputs (KeptOps). Workers
// active at once keep to different CPUs
// (WorkerPlacement), and a running worker makes way for a started one that
// may wait behind it (LateStarts).

#include <atomic>
#include <memory>
#include <mutex>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include "depengine/executor.h"
#include "devices/cpu/kept_ops.h"
#include "devices/cpu/late_starts.h"
#include "devices/cpu/parked_workers.h"
#include "devices/cpu/ready_queue.h"
#include "devices/cpu/worker_clocks.h"
#include "devices/cpu/worker_mailboxes.h"
#include "devices/cpu/worker_placement.h"
#include "engine/cpu_workers.h"
#include "sync/tuning.h"
#if DEPENGINE_TSAN
#include "devices/cpu/tsan_arena.h"
#endif

namespace depengine {
class EngineCore;
}

namespace depengine::detail {

class CpuExecutor final : public CpuWorkers {
 public:
  CpuExecutor(EngineCore& engine, int threads);
  ~CpuExecutor() override;

  void submit(ReadyOp op) override;
  void submit_plain(OpBlock* const* ops, std::size_t count) override;
  void submit_unattended(OpBlock* const* ops, std::size_t count) override;
  void attend() override;
  std::optional<double> workers_cpu_seconds() const override { return clocks_.seconds(); }
  bool workers_asleep() const override { return clocks_.all_asleep(); }
  void shutdown() override;
  /// The thread would only sleep otherwise, and ops it runs need no hand-off.
  bool help() override;
  bool worker_on_this_cpu() const override { return placement_.occupied(WorkerPlacement::current_cpu()); }
  bool neighbours_on_every_core() const override { return MachineLoad::process().neighbour_cores() >= cores_; }
  bool step_off_workers(bool rate_limited) override { return placement_.step_off(rate_limited); }

  /// How many of `threads` workers may be active at once on `cores` cores,
  /// `neighbour_cores` of which other threads keep busy (MachineLoad): the
  /// cores they leave, at least one; all of them without neighbours.
  static int active_limit(int threads, int cores, int neighbour_cores);

 private:
  static constexpr std::size_t kMaxBatch = tuning::kWorkerBatch;
  // A completion's ready ops come in groups of at most this many.
  static constexpr std::size_t kMaxKeepGroup = tuning::kDispatchGroup;

  /// `cores`: those the process may run on, read once for the spare-core
  /// test and the cap alike.
  CpuExecutor(EngineCore& engine, int threads, int cores);

  bool watch_queue(std::uint64_t completed) override;

  /// active_limit() for this executor and the neighbours now, raised by
  /// the escapes watch_queue allowed.
  int active_limit() const;
  /// Queued ops were left to the active workers: the engine's timer
  /// watches from now on (watch_queue).
  void keep_watch();
  /// Nothing queued is left to the workers any longer: the watch, and the
  /// escapes past the cap, end.
  void end_watch();
  void start_worker_if_needed(std::size_t backlog);
  /// Moves the ops queued unattended to the workers' queue and starts a
  /// worker for them; with `clear`, only if the mark of ops queued
  /// unattended was set (clearing it). Under held_moves_, the mark's
  /// clearing included: a thread that takes the lock after another's
  /// attend() finds the ops in the queue.
  void hand_held_to_workers(bool clear = false);
  /// Clears the mark of ops queued unattended; whether it was set and ops
  /// are still queued.
  bool clear_unattended();
  /// Hands `count` ops to workers spinning for work, as many as there are;
  /// returns how many it handed over.
  std::size_t deliver_to_spinners(OpBlock* const* ops, std::size_t count);
  /// For a worker completing an op: keeps those of `ops` that declare data
  /// in its free slots, and copies the others to `others` in order;
  /// returns how many it kept.
  std::size_t keep_successors(OpBlock* const* ops, std::size_t count, OpBlock** others);
  /// An op this worker keeps, unless others took them all or an op of
  /// positive priority waits (the kept ones are then queued).
  OpBlock* take_back_kept();
  void worker_loop();
  /// A worker's pop from the queue. Held ops are ready ops of priority 0:
  /// a worker left with only ops of negative priority moves them to the
  /// queue (hand_held_to_workers) and takes them first.
  std::size_t pop_for_worker(OpBlock** out, std::size_t max, bool& more);
  /// For a worker that retired beside busy threads: sleeps until a submit
  /// hands it work (true: it is active again, on the slot `placed` now
  /// holds) or kWorkerPark passes (false: its task should end).
  bool park(int& placed);
  /// For a worker that closed its box on `delivered` holding `count` ops
  /// from the queue: keeps the delivered op alone in `batch`, returns 1.
  std::size_t keep_delivered(OpBlock* delivered, OpBlock** batch, std::size_t count);
  /// Both return how many ops they ran (with the successors run inline);
  /// a worker's placement `slot` (-1 for a helper) is rechecked now and
  /// then (WorkerPlacement::recheck).
  std::size_t run_batch(OpBlock** batch, std::size_t count, int slot);
  std::size_t run_chain(OpBlock* op, int slot);
  /// For a worker task that begins (or an unparked worker): takes its
  /// place (WorkerPlacement) and makes way for a worker started with it.
  /// Returns the placement slot.
  int arrive();
  /// As a worker begins (`arriving`) or before an op: yields the CPU to a
  /// started worker that has not begun and may wait behind this one
  /// (LateStarts).
  void make_way_for_started_worker(bool arriving);

  EngineCore& engine_;
  const int cores_;
  std::unique_ptr<oneapi::tbb::global_control> parallelism_;
#if DEPENGINE_TSAN
  TsanArena arena_;
#else
  oneapi::tbb::task_arena arena_;
#endif
  ReadyQueue queue_;
  // The ops queued unattended (submit_unattended): a helper's, until
  // attend() hands them to the workers.
  ReadyQueue held_{1};
  std::mutex held_moves_;
  WorkerPlacement placement_;
  WorkerMailboxes mailboxes_;
  KeptOps kept_;
  WorkerClocks clocks_;
  ParkedWorkers parked_;
  // Every op a worker runs reads it; starts and arrivals write it.
  alignas(64) LateStarts starts_;
  // A worker that runs out of work writes spinning_, often when it keeps
  // pace with the frontend: a line of its own, apart from active_
  // (CpuWorkers), which every submit reads too.
  alignas(64) std::atomic<int> spinning_{0};  // of the active, idly looking for work
  // Set by a worker that retired leaving the exact look at the queue to the
  // spinning ones: the next that stops spinning to run ops makes it.
  alignas(64) std::atomic<bool> look_left_{false};
  std::atomic<int> running_tasks_{0};         // worker tasks not yet returned
  // Set when queued ops were left to the active workers (or the cap refused
  // a start), until the last worker retires with nothing queued; escapes_
  // raises the cap meanwhile (watch_queue). Read by many submits, written
  // once per watch.
  alignas(64) std::atomic<bool> watched_{false};
  std::atomic<int> escapes_{0};
  // The engine's timer thread's alone (watch_queue).
  bool window_open_ = false;
  SpinClock::time_point window_at_{};  // the window watch_queue judges began
  std::uint64_t window_completed_ = 0;  // the count then
};

}  // namespace depengine::detail
