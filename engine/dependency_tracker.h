#pragma once
// Dependency tracking on one variable's version queue (the mechanism).
//
// An entry is granted when nothing earlier in the queue conflicts with it:
// a read when no earlier write is still active, a write when nothing earlier
// is active. On a stream device, an entry may also be granted early when
// every conflicting active entry was *launched* on the same device: it then
// carries their fences and the device orders the work on the GPU.
// A granted entry's op is noted in the ReadyList, whose settle() (called
// after unlocking) decrements its pending count; ops reaching zero are ready.
// A granted entry also takes the variable's error as its input error
// (Entry::error); a wait takes it over and clears it.
// All functions expect the variable's lock held.

#include <cstddef>
#include <vector>

#include "engine/op_block.h"
#include "engine/var_state.h"

namespace depengine::detail {

/// A stack of ops that lives on the stack: the first kInline need no allocation.
class OpStack {
 public:
  void push(OpBlock* op) {
    if (size_ < kInline) {
      inline_[size_] = op;
    } else {
      overflow_.push_back(op);
    }
    ++size_;
  }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  /// The i-th op pushed and not yet popped.
  OpBlock* operator[](std::size_t i) const { return i < kInline ? inline_[i] : overflow_[i - kInline]; }
  OpBlock* pop() {
    --size_;
    if (size_ < kInline) return inline_[size_];
    OpBlock* op = overflow_.back();
    overflow_.pop_back();
    return op;
  }

 private:
  // A batch of pushes (PushBuffer) grants up to its size at once.
  static constexpr std::size_t kInline = 32;
  OpBlock* inline_[kInline];
  std::size_t size_ = 0;
  std::vector<OpBlock*> overflow_;
};

/// What the variables' queues released while their locks were held, dealt
/// with after unlocking: ops whose entries were granted still have their
/// pending counts to count down, and ops made ready wait to be dispatched.
///
/// Counting down after unlocking keeps the op's line, which the pushing
/// thread wrote on another core, out of the critical section: a worker
/// completing a chain's op would otherwise hold the variable's lock through
/// that cache miss while the frontend spins on it to append the next op.
class ReadyList {
 public:
  /// One entry of `op` was granted (the variable's lock held).
  void granted(OpBlock* op) {
    prefetch_for_write(op);  // arrives while the lock is still held
    granted_.push(op);
  }
  /// Counts down the ops granted since the last call (no lock held); those
  /// that reach zero become ready.
  void settle() {
    while (!granted_.empty()) {
      OpBlock* op = granted_.pop();
      if (op->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) push(op);
    }
  }
  /// The same, for grants made while registering ops whose count has no push
  /// hold (a PushBuffer's batch): an op with one entry, granted here, was counted
  /// down by nobody else and never will be, so it is ready without the
  /// atomic decrement.
  void settle_registered() {
    while (!granted_.empty()) {
      OpBlock* op = granted_.pop();
      if (op->entries.size() == 1 || op->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) push(op);
    }
  }

  void push(OpBlock* op) {
    // Whoever dispatches it reads it next; it was last written elsewhere.
    prefetch_block(op);
    ready_.push(op);
  }
  bool empty() const { return ready_.empty(); }
  std::size_t size() const { return ready_.size(); }
  /// The i-th ready op pushed and not yet popped (the profiler reads which
  /// ops a completion released: those at indices from the size before it).
  OpBlock* operator[](std::size_t i) const { return ready_[i]; }
  OpBlock* pop() { return ready_.pop(); }

 private:
  OpStack granted_;
  OpStack ready_;
};

namespace dependency {

/// Appends `entry` at the tail of its variable's queue and grants it if it
/// can be; returns whether it did. Only the entry itself can be granted here,
/// and its op's pending count is left to the caller (see OpBlock::pending):
/// nothing is added to `ready`.
bool append(VarState& var, Entry& entry);

/// Appends the entries `first` .. `last`, already linked to one another
/// through prev / next in push order, at the tail of the variable's queue,
/// and grants those that can start (their ops go to `ready`).
void splice(VarState& var, Entry& first, Entry& last, ReadyList& ready);

/// The entry's work has been enqueued on a stream; its op's launch_fence is set.
void mark_launched(VarState& var, Entry& entry, ReadyList& ready);

/// The entry's op, which writes the variable, failed with `error`: the
/// variable and the entries granted behind it (early) take that error.
void propagate_failure(VarState& var, const Entry& entry, const std::exception_ptr& error);
/// The same for a write that held the variable without an entry (an
/// adopted variable, engine/var_adoption.h): nothing is granted early there.
void set_error(VarState& var, const std::exception_ptr& error);

/// Links `entry`, granted, into the variable's empty queue: it holds the
/// variable for work that started without an entry (a stand-in for graph
/// replays in flight, engine/var_adoption.h) until remove_completed.
void hold(VarState& var, Entry& entry);

/// Removes the completed entry and grants what it was holding back.
void remove_completed(VarState& var, Entry& entry, ReadyList& ready);

}  // namespace dependency
}  // namespace depengine::detail
