#pragma once
// AsymmetricFence: a store-load fence split into a cheap half and an
// expensive one, for a handshake where one side runs all the time and the
// other seldom.
//
// A submit publishes a ready op, then reads whether a worker is awake; a
// worker going to sleep lowers the count of awake workers, then looks for
// ops once more. Each side needs a full fence between its store and its load,
// or both can miss the other and the op is stranded. Submits happen for every
// op, a worker sleeps once per idle spell: light() (the submit's half) is a
// compiler barrier, and heavy() (the sleeper's) makes every running thread of
// the process execute a full memory barrier (Linux membarrier,
// MEMBARRIER_CMD_PRIVATE_EXPEDITED). Whatever store a light() side made
// before its load is then visible to the heavy() side, or that load sees the
// heavy side's store. Where membarrier is unavailable, both halves are full
// fences.

#include <atomic>

namespace depengine::detail {

class AsymmetricFence {
 public:
  /// Registers the process for the expedited membarrier, once. Call before
  /// the threads that use light() and heavy() start (an executor's
  /// constructor): a light() that reads "expedited" is then paired with a
  /// heavy() that reads it too.
  static void init();

  static void light() {
    if (expedited_.load(std::memory_order_relaxed)) {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
  }

  static void heavy();

 private:
  static std::atomic<bool> expedited_;
};

}  // namespace depengine::detail
