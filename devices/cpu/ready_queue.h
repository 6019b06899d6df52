#pragma once
// ReadyQueue: ready CPU operations waiting for a worker.
//
// Priority-0 operations travel through one single-producer ring per thread
// that submits (Boost.Lockfree spsc_queue): a push is a few nanoseconds and
// touches no line another producer writes. Consumers take a ring's consumer
// lock to pop. Operations with a non-zero priority (rare) go through a
// mutex-guarded heap: above-zero ones are taken before the rings, below-zero
// ones after.

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <queue>
#include <vector>

#include <boost/lockfree/spsc_queue.hpp>

#include "engine/op_block.h"

namespace depengine::detail {

class ReadyQueue {
 public:
  ReadyQueue();
  ~ReadyQueue();

  void push(OpBlock* op);
  /// The next operation to run, or null when none is queued.
  OpBlock* pop();
  /// True if some operation may be queued (exact after a seq_cst fence on
  /// both sides; used to avoid losing a wake-up).
  bool maybe_nonempty() const;

 private:
  struct Ring {
    boost::lockfree::spsc_queue<OpBlock*, boost::lockfree::capacity<1024>> queue;
    std::atomic<bool> consumer_busy{false};
    std::atomic<bool> maybe_nonempty{false};
  };

  struct ByPriority {
    bool operator()(const OpBlock* a, const OpBlock* b) const {
      if (a->priority != b->priority) return a->priority < b->priority;
      return a->sequence > b->sequence;  // FIFO among equals
    }
  };

  Ring* my_ring();
  static OpBlock* pop_ring(Ring& ring);
  OpBlock* pop_rings();
  OpBlock* pop_spill();
  OpBlock* pop_heap(bool positive_only);

  static constexpr std::size_t kMaxRings = 256;

  const std::uint64_t id_;
  std::array<std::atomic<Ring*>, kMaxRings> rings_{};
  std::atomic<std::size_t> ring_count_{0};
  std::mutex rings_mutex_;
  std::atomic<std::uint32_t> scan_start_{0};

  // Ready operations are unordered among themselves, so whatever does not
  // fit a ring (a full ring, a thread beyond kMaxRings) may wait here.
  std::mutex spill_mutex_;
  std::deque<OpBlock*> spill_;
  std::atomic<std::size_t> spill_size_{0};

  std::mutex heap_mutex_;
  std::priority_queue<OpBlock*, std::vector<OpBlock*>, ByPriority> heap_;
  std::atomic<int> heap_positive_{0};
  std::atomic<int> heap_size_{0};
  std::uint64_t heap_sequence_ = 0;
};

}  // namespace depengine::detail
