#pragma once
// PushBuffer: one frontend thread's pushes, registered in the variables'
// queues in batches (the mechanism; when to flush is the engine's policy).
//
// Registering each push at once makes a variable's line change cores twice
// per operation when a worker completes what the frontend appends: on a
// chain, that hand-over is most of the cost. A buffer links the entries of
// its operations per variable as they are pushed, and a flush splices each
// variable's run into its queue under one lock acquisition.
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
// A flush takes the locks of all the batch's variables at once (in address
// order), so that a batch is registered atomically, like one push with many
// entries, and never interleaves with another registration in two orders.
//
// Locks: a buffer's lock is taken before variables' locks, and a thread
// holds at most one buffer's lock.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/dependency_tracker.h"
#include "engine/op_block.h"
#include "engine/short_lock.h"
#include "engine/var_state.h"

namespace depengine::detail {

class PushBuffer {
 public:
  /// A batch is flushed when it holds this many operations, or touches this
  /// many variables (whose locks a flush holds together).
  static constexpr std::size_t kMaxOps = 32;
  static constexpr std::size_t kMaxVars = 16;

  PushBuffer();

  void lock() { lock_.lock(); }
  void unlock() { lock_.unlock(); }

  /// Takes the claims of the variables `op` touches (lock held). False when
  /// another buffer holds one of them: `op` must then be registered directly.
  bool claim(const OpBlock& op);
  /// Adds a claimed operation with at least one entry (lock held), and
  /// counts it as pushed.
  void add(OpBlock* op);
  /// Operations ever added (any thread; see InFlightCounter).
  std::uint64_t pushed() const { return pushed_.load(std::memory_order_seq_cst); }
  bool full() const { return ops_ >= kMaxOps || runs_.size() >= kMaxVars; }
  bool empty() const { return ops_ == 0; }

  /// Registers every buffered operation in its variables' queues (lock
  /// held); those that can start go to `ready`. Returns how many there were.
  std::size_t flush(ReadyList& ready);

  /// For a periodic check (lock held): whether the buffer holds operations
  /// and was not flushed since the previous call.
  bool stale();

 private:
  // The entries a batch holds for one variable, linked in push order; the
  // last is the variable's batch_tail.
  struct Run {
    VarState* var;
    Entry* first;
  };

  alignas(64) ShortLock lock_;
  std::size_t ops_ = 0;
  std::vector<Run> runs_;
  std::uint64_t flushes_ = 0;
  std::uint64_t flushes_seen_ = 0;
  // Written under the lock only, so a plain store counts: cheaper than the
  // locked add of a shared counter, on a line this thread owns anyway.
  std::atomic<std::uint64_t> pushed_{0};
};

}  // namespace depengine::detail
