#pragma once
// PushBuffer: one frontend thread's pushes, registered in the variables'
// queues in batches (the mechanism; when to register, and who, is the
// engine's policy).
//
// Registering each push at once makes a variable's line change cores twice
// per operation when a worker completes what the frontend appends: on a
// chain, that hand-over is most of the cost. A buffer links the entries of
// its operations per variable as they are pushed, and a registration
// splices each variable's run into its queue under one lock acquisition.
//
// A full batch is sealed and waits in the buffer until someone registers
// it: a worker with nothing to do, or the frontend itself. Registering is a
// good part of a push's cost, and a worker that waits for work anyway can
// take it off the frontend. Batches are registered one at a time, oldest
// first.
//
// Whether most operations of the last batch registered had to wait for
// others tells the owner how its variables are used: a frontend registering
// behind running operations takes their variables' lines from the workers
// completing them, so it is better left to the workers (see RoomWait).
//
// Order across threads. A push that returned must be ordered before every
// push that starts after it, whichever threads they come from. Each variable
// therefore has a claim: the one buffer that may hold operations on it not
// yet in its queue. A buffer adds an operation only when it holds the claim
// of every variable the operation touches (taking unclaimed ones);
// everything else registers at once, after flushing the buffers that hold
// the claims of its variables. Claims stay with a buffer after a flush (an
// empty buffer orders nothing), so a variable used by one thread is claimed
// once, and its claim line, the frontends' own (VarState), stays in that
// thread's cache.
//
// A registration takes the locks of all the batch's variables at once (in
// address order), so that a batch is registered atomically, like one push
// with many entries, and never interleaves with another registration in
// two orders.
//
// Sealed batches pass from the owner to a registrant through two counters,
// not through lock_: the owner takes lock_ on every push, and a worker that
// took it to pick up a batch would pull the owner's line away (and make it
// wait) once per batch.
//
// Locks: register_lock_, then lock_ (briefly), then variables' locks; a
// thread holds at most one buffer's locks.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/dependency_tracker.h"
#include "engine/in_flight_counter.h"
#include "engine/op_block.h"
#include "sync/short_lock.h"
#include "sync/spin_lock.h"
#include "sync/tuning.h"
#include "engine/var_state.h"

namespace depengine::detail {

class PushBuffer {
 public:
  /// A batch is sealed when it holds this many operations, or touches this
  /// many variables (whose locks a registration holds together).
  static constexpr std::size_t kMaxOps = tuning::kBatchMaxOps;
  static constexpr std::size_t kMaxVars = tuning::kBatchMaxVars;

  /// `sealed_anywhere` counts the sealed batches of every buffer of an
  /// engine: idle workers look there first.
  explicit PushBuffer(std::atomic<std::size_t>& sealed_anywhere);

  // The owner's side, with lock() held.
  void lock() { lock_.lock(); }
  void unlock() { lock_.unlock(); }
  /// Takes the claims of the variables `op` touches. False when another
  /// buffer holds one of them: `op` must then be registered directly.
  bool claim(const OpBlock& op);
  /// Adds a claimed operation with at least one entry to the current batch,
  /// and counts it as pushed.
  void add(OpBlock* op);
  bool full() const { return current().ops >= kMaxOps || current().runs.size() >= kMaxVars; }
  /// Whether the current batch holds nothing.
  bool empty() const { return current().ops == 0; }
  /// Closes the current batch, to be registered later. False (and nothing
  /// changed) when every slot is taken: see seal_making_room.
  bool seal();

  // Any thread, without lock() held. Each returns how many operations it
  // registered; those that can start go to `ready`.
  /// Registers the batches sealed so far, unless another thread is
  /// registering this buffer's batches (then returns 0 at once: the caller
  /// only looks for work, and should not sleep on the lock).
  std::size_t register_sealed(ReadyList& ready);
  /// Registers everything, the current batch included.
  std::size_t flush(ReadyList& ready);
  /// The owner's, when seal() found every slot taken: registers the oldest
  /// sealed batch (unless a registration made room meanwhile), then seals
  /// the current one. The other sealed batches are left for the workers: a
  /// frontend that outruns them would otherwise end up registering every
  /// batch itself, and be slower still. When another thread is registering,
  /// waits as `wait` says for it to free a slot (it frees one per batch)
  /// before waiting on its lock for all of them; with `for_workers`, waits
  /// so first even while nobody registers, for a worker to run out of work
  /// and register, and registers the oldest batch itself only after that.
  /// With `workers`, whose completed operations (and this buffer's
  /// registrations) count their progress, the spins end as soon as that
  /// stands still (ProgressWatch): a registrant that is
  /// not running frees nothing, and this thread may hold the core it needs.
  /// `workers_stalled`, when given, tells whether that happened.
  struct RoomWait {
    std::chrono::nanoseconds spin{0};  // none: wait on the lock at once
    bool yield = false;                // each round yields the core, instead of pausing
    bool for_workers = false;
    const InFlightCounter* workers = nullptr;
  };
  std::size_t seal_making_room(ReadyList& ready, RoomWait wait, bool* workers_stalled = nullptr);
  /// For a periodic check: flushes when operations waited since the
  /// previous call and nothing was registered meanwhile (nor is being
  /// registered now). `holds_ops` tells whether any remain.
  std::size_t flush_if_stale(ReadyList& ready, bool& holds_ops);

  /// Whether sealed batches wait (a hint, read without the locks).
  bool has_sealed() const {
    return sealed_end_.load(std::memory_order_relaxed) != oldest_.load(std::memory_order_relaxed);
  }
  /// Whether some thread is registering this buffer's batches (a hint).
  bool registering() const { return register_lock_.held(); }
  /// Whether most operations of the last batch registered had to wait for
  /// earlier ones (a hint; false before the first registration).
  bool ops_mostly_waited() const { return ops_mostly_waited_.load(std::memory_order_relaxed); }
  /// For the owner, without the lock: false only when everything it pushed
  /// was registered (it may be true needlessly, never false wrongly).
  bool maybe_holds_ops() const {
    return pushed_.load(std::memory_order_relaxed) != registered_.load(std::memory_order_relaxed);
  }
  /// Operations ever added (any thread; see InFlightCounter).
  std::uint64_t pushed() const { return pushed_.load(std::memory_order_seq_cst); }

 private:
  // The entries a batch holds for one variable, linked in push order; while
  // the batch is current, the last is the variable's batch_tail.
  struct Run {
    VarState* var;
    Entry* first;
    Entry* last;
  };
  // A line each: the owner fills one batch while a registrant empties another.
  struct alignas(64) Batch {
    std::size_t ops = 0;
    std::vector<Run> runs;
  };
  // The oldest sealed batches and the current one; one slot stays free so
  // that a batch being registered is never the current one. A frontend that
  // waits for the workers to register (RoomWait::for_workers) keeps pushing
  // into these slots meanwhile.
  static constexpr std::size_t kBatches = tuning::kBatchSlots;

  // Batches are numbered from 0 as they are started: [oldest_, sealed_end_)
  // are sealed, sealed_end_ is the current one, in slot number % kBatches.
  std::uint64_t sealed_count() const {
    return sealed_end_.load(std::memory_order_relaxed) - oldest_.load(std::memory_order_acquire);
  }
  Batch& current() { return batches_[sealed_end_.load(std::memory_order_relaxed) % kBatches]; }
  const Batch& current() const { return batches_[sealed_end_.load(std::memory_order_relaxed) % kBatches]; }
  void seal_current();  // lock_ held, a free slot
  /// Waits as `wait` says for a registrant to free a slot; whether one did.
  /// Sets `stalled` when it stopped because the workers stood still.
  bool wait_for_room(RoomWait wait, bool& stalled) const;
  /// Registers the `count` oldest sealed batches (register_lock_ held).
  std::size_t register_oldest(std::uint64_t count, ReadyList& ready);
  void register_batch(Batch& batch, ReadyList& ready);  // register_lock_ held

  alignas(64) ShortLock lock_;  // the current batch, and sealing it
  // Written under the lock only, so a plain store counts: cheaper than the
  // locked add of a shared counter, on a line this thread owns anyway.
  std::atomic<std::uint64_t> pushed_{0};
  std::atomic<std::size_t>& sealed_anywhere_;

  // Apart from lock_'s line: workers looking for sealed batches read it,
  // and the owner writes it once per batch only. Released under lock_, once
  // the batch it closes is complete.
  alignas(64) std::atomic<std::uint64_t> sealed_end_{0};

  std::array<Batch, kBatches> batches_;

  alignas(64) SpinLock register_lock_;  // registrations, one at a time
  // Released once the registered batch's slot is emptied, for reuse.
  std::atomic<std::uint64_t> oldest_{0};  // written under register_lock_
  std::uint64_t registrations_ = 0;       // guarded by register_lock_
  std::uint64_t registrations_seen_ = 0;
  std::atomic<std::uint64_t> registered_{0};  // ops; written under register_lock_
  std::atomic<bool> ops_mostly_waited_{false};  // written under register_lock_
};

}  // namespace depengine::detail
