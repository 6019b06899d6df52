#pragma once
// WorkerMailboxes: a one-op slot per worker, through which a thread that
// made an op ready hands it straight to a worker idly looking for work.
//
// Through the ready queue, such a hand-off is a chain of cache misses on the
// receiving core, each waiting for the one before: the ring's write index,
// its slot, the consumer flag, then the op. A mailbox is one line that the
// spinning worker reads anyway: the op's address arrives with the miss that
// tells it there is work. On a stencil, where each completion makes two ops
// ready and the second goes to the other worker, that miss chain is most of
// the time between two steps.
//
// A worker task claims a box for as long as it runs, opens it while it spins
// and closes it before it stops spinning; an op delivered meanwhile is the
// worker's to run, so an op in a box is never left without a worker.
//
// Unless the kernel takes the spinner off its core: beside busy threads its
// yield may cost it a slice (milliseconds), and the op would wait that long.
// So the spinner notes the time of its rounds in its box, and another idle
// worker reclaims an op from a box whose owner has not been seen awake for
// longer than a running spinner ever stays away, and closes the box, so that
// no more ops go there. Either way the op is taken exactly once.
//
//   const int box = mailboxes.claim();
//   mailboxes.open(box, now);
//   while (spinning) {
//     mailboxes.awake(box, now);
//     if (OpBlock* op = mailboxes.take(box)) run(op);
//     if (OpBlock* op = mailboxes.reclaim(box, now - kStaleSpinner)) run(op);
//   }
//   if (OpBlock* op = mailboxes.close(box)) run(op);
//   mailboxes.release(box);

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/op_block.h"
#include "sync/spin_wait.h"

namespace depengine::detail {

class WorkerMailboxes {
 public:
  /// `boxes`: how many workers may hold one at once.
  explicit WorkerMailboxes(int boxes);

  /// A box for the calling worker task, -1 when every box is held: one per
  /// arena slot, but an op that waits inside oneTBB (a parallel_for of its
  /// own) may run another worker task nested on its thread, which then works
  /// from the ready queue alone.
  int claim();
  /// Gives the box back (closed, empty).
  void release(int box);

  /// How stale a thief's view of an owner's last round may be.
  static constexpr std::chrono::microseconds kAwakeResolution{2};

  /// Accepts deliveries into `box` from `now` on.
  void open(int box, SpinClock::time_point now) {
    boxes_[box].awake_at.store(now.time_since_epoch().count(), std::memory_order_relaxed);
    boxes_[box].state.store(kOpen, std::memory_order_seq_cst);
  }
  /// Notes that the owner of the open `box` still spins at `now`; at most
  /// once per kAwakeResolution, since each store takes the line back from
  /// the other idle workers that read it.
  void awake(int box, SpinClock::time_point now) {
    std::atomic<SpinClock::rep>& at = boxes_[box].awake_at;
    const SpinClock::time_point noted{SpinClock::duration(at.load(std::memory_order_relaxed))};
    if (now - noted >= kAwakeResolution) at.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  }
  /// The op delivered into the open `box`, if any and not reclaimed (the box
  /// is then closed).
  OpBlock* take(int box);
  /// Whether an op waits in `box` (one load of the receiver's own line).
  bool has_delivery(int box) const { return boxes_[box].state.load(std::memory_order_relaxed) > kOpen; }
  /// Stops accepting; returns the op delivered before that, if any.
  OpBlock* close(int box);

  /// Puts ops[0], ops[1], ... into open boxes while there are some; returns
  /// how many it delivered (each now belongs to a spinning worker, or to
  /// another idle worker that reclaims it).
  std::size_t deliver(OpBlock* const* ops, std::size_t count);
  /// An op waiting in a box other than `thief`'s (-1: none) whose owner was
  /// last awake at or before `awake_by`, if the race for it is won; that box
  /// is then closed.
  OpBlock* reclaim(int thief, SpinClock::time_point awake_by);

 private:
  // Box states besides a delivered op's address (never 1 or 2: blocks are
  // aligned to 64).
  static constexpr std::uintptr_t kFree = 0;    // no worker holds it
  static constexpr std::uintptr_t kClosed = 1;  // held, not accepting
  static constexpr std::uintptr_t kOpen = 2;    // held by a spinning worker

  // Each box on a line of its own: a delivery writes only its receiver's.
  struct alignas(64) Box {
    std::atomic<std::uintptr_t> state{kFree};
    std::atomic<SpinClock::rep> awake_at{0};  // written by its owner alone
  };

  const int count_;
  std::unique_ptr<Box[]> boxes_;
};

}  // namespace depengine::detail
