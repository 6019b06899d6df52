#pragma once
// KeptOps: one slot per worker for an op that a completion on that worker
// made ready, beside the op it continues with, and that works on much data
// (PushOptions::bytes): its inputs are in this worker's cache.
//
// Handed to an idle worker at once, such an op runs on another core, and its
// data follows it there line by line: in depbench's training_step with two
// workers (GEMMs and updates of 2-8 µs on 32-800 KiB), the ops took 1.4x
// their time on one worker in all, more than the two workers won. Kept, it
// runs on this worker as soon as the op it continues with ends. Another
// worker takes it only once it has been kept kKeptOpWait (the keeper is then
// in a long op, and parallelism pays), or as its own look for work ends.
//
//   kept.keep(box, op, now);                // the completing worker
//   if (OpBlock* op = kept.take_back(box))  // the same, when its chain ends
//   if (OpBlock* op = kept.steal(box, now - kKeptOpWait))  // an idle worker
//
// A pure bookkeeping class on a clock the caller reads (tested with
// made-up times).

#include <atomic>
#include <memory>

#include "engine/op_block.h"
#include "sync/spin_wait.h"

namespace depengine::detail {

class KeptOps {
 public:
  /// `workers`: how many slots, one per worker mailbox (WorkerMailboxes).
  explicit KeptOps(int workers);

  /// Keeps `op` in `worker`'s slot from `now`; false when the slot holds
  /// one already (the op is then the caller's to hand over).
  bool keep(int worker, OpBlock* op, SpinClock::time_point now);
  /// The op `worker` keeps, if no other worker took it.
  OpBlock* take_back(int worker);
  /// An op another worker than `thief` (-1: none) kept at or before
  /// `kept_by`, if there is one and the race for it is won.
  OpBlock* steal(int thief, SpinClock::time_point kept_by);
  /// Whether some worker keeps an op (a look at every slot).
  bool any() const;

 private:
  struct alignas(64) Slot {
    std::atomic<OpBlock*> op{nullptr};
    std::atomic<SpinClock::rep> since{0};  // when `op` was kept
  };

  const int count_;
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace depengine::detail
