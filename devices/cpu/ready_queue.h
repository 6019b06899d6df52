#pragma once
// ReadyQueue: ready CPU operations waiting for a worker.
//
// Priority-0 operations travel through one single-producer ring per thread
// that submits (Boost.Lockfree spsc_queue): a push is a few nanoseconds and
// touches no line another producer writes. Consumers take a ring's consumer
// lock to pop. Operations with a non-zero priority (rare) go through a
// mutex-guarded heap: above-zero ones are taken before the rings, below-zero
// ones after.
//
// Each ring has a hint, "may be non-empty", so that consumers skip the rings
// of threads that stopped pushing. A push sets it; only a worker about to
// sleep clears it (queued_after_retiring), so a push pays no fence: the
// handshake with the sleeper is an AsymmetricFence.

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
  /// `consumers`: how many threads pop, so that a pop takes only its share.
  explicit ReadyQueue(std::size_t consumers);
  ~ReadyQueue();

  /// Queues `op`; returns about how many ops wait in the queue it went to
  /// (a hint for how many workers are worth waking). Ends with the light
  /// half of an AsymmetricFence: what the caller reads next (the count of
  /// active workers) is ordered after the op's publication.
  std::size_t push(OpBlock* op);
  /// The same for several ops of priority 0 at once.
  std::size_t push_plain(OpBlock* const* ops, std::size_t count);
  /// Which ops a pop may take: those of negative priority go after every
  /// op of priority 0, also after ready ones waiting elsewhere (held ops:
  /// devices/cpu/cpu_executor.h), which the caller takes in between.
  enum class Take { all, non_negative, positive };
  /// Takes up to `max` operations to run (a fair share of a ring or of the
  /// overflow, or one prioritized op) into `out`; returns how many, 0 when
  /// none is queued.
  /// `more` tells whether the place they came from still holds some.
  std::size_t pop(OpBlock** out, std::size_t max, bool& more, Take take = Take::all);
  /// How many ops of positive priority are queued.
  const std::atomic<int>& positive_count() const { return heap_positive_; }
  /// Whether ops of negative priority are queued (a hint, without a fence).
  bool holds_negative() const {
    return heap_size_.load(std::memory_order_relaxed) != heap_positive_.load(std::memory_order_relaxed);
  }
  /// For a worker about to sleep, after it lowered the count of active
  /// workers: clears the hints of empty rings, then (after the heavy half of
  /// the AsymmetricFence) tells whether any op is queued. Exact: an op whose
  /// push did not see the lowered count is seen here.
  bool queued_after_retiring();
  /// Whether any op is queued as far as this thread sees now, without a
  /// fence: enough for a worker that retires while another spins, which
  /// keeps looking and so runs what a push racing with this look leaves.
  bool queued_now() const;

 private:
  static constexpr std::size_t kRingCapacity = 8192;

  // The flags live on lines of their own: every pop writes consumer_busy,
  // while the producer reads maybe_nonempty on every push, and sharing a line
  // made each of those reads a miss.
  struct Ring {
    boost::lockfree::spsc_queue<OpBlock*, boost::lockfree::capacity<kRingCapacity>> queue;
    alignas(64) std::atomic<bool> consumer_busy{false};
    alignas(64) std::atomic<bool> maybe_nonempty{false};
  };

  struct ByPriority {
    bool operator()(const OpBlock* a, const OpBlock* b) const {
      if (a->priority != b->priority) return a->priority < b->priority;
      return a->sequence > b->sequence;  // FIFO among equals
    }
  };

  Ring* my_ring();
  std::size_t pop_ring(Ring& ring, OpBlock** out, std::size_t max, bool& more);
  std::size_t pop_rings(OpBlock** out, std::size_t max, bool& more);
  std::size_t pop_spill(OpBlock** out, std::size_t max);
  OpBlock* pop_heap(bool positive_only);

  static constexpr std::size_t kMaxRings = 256;

  const std::size_t consumers_;
  const std::uint64_t id_;
  std::array<std::atomic<Ring*>, kMaxRings> rings_{};
  std::atomic<std::size_t> ring_count_{0};
  std::mutex rings_mutex_;

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
