#pragma once
// KeptOps: a few slots per worker for ops that a completion on that worker
// made ready beside the op it continues with, when they and the completed
// op declare data (PushOptions::bytes): their inputs are in this worker's
// cache.
//
// Handed to an idle worker at once, such an op runs on another core, and its
// data follows it there line by line; so does the chain it continues, since
// the op that completes a join last continues with what it releases: a
// bias update handed away took the next layer's activations with it. In
// depbench's training_step with two workers (GEMMs and updates of 2-8 µs on
// 1-800 KiB), the ops took 1.4x their time on one worker in all, more than
// the two workers won. Kept, they run on this worker as soon as the op it
// continues with ends. Another worker takes one only once it has been kept
// kKeptOpWait (the keeper is then in a long op, and parallelism pays), or
// as its own look for work ends.
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
#include "sync/tuning.h"

namespace depengine::detail {

class KeptOps {
 public:
  static constexpr int kSlots = tuning::kKeptOpsPerWorker;

  /// `workers`: whose slots, one set per worker mailbox (WorkerMailboxes).
  explicit KeptOps(int workers);

  /// Keeps `op` in a free slot of `worker`'s from `now`; false when all
  /// kSlots hold one (the op is then the caller's to hand over).
  bool keep(int worker, OpBlock* op, SpinClock::time_point now);
  /// One of the ops `worker` keeps (from the lowest slot), if another
  /// worker did not take them all.
  OpBlock* take_back(int worker);
  /// An op another worker than `thief` (-1: none) kept at or before
  /// `kept_by`, if there is one and the race for it is won.
  OpBlock* steal(int thief, SpinClock::time_point kept_by);
  /// Whether some worker keeps an op (a look at every slot).
  bool any() const;

 private:
  // A worker's slots share one line: its keeper's, which thieves only read
  // until they take an op.
  struct alignas(64) Slots {
    std::atomic<OpBlock*> op[kSlots]{};
    std::atomic<SpinClock::rep> since[kSlots]{};  // when op[i] was kept
  };
  static_assert(sizeof(Slots) == 64, "KeptOps: a worker's slots fill one line");

  const int count_;
  std::unique_ptr<Slots[]> slots_;
};

}  // namespace depengine::detail
