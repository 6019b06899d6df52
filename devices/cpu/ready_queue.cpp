#include "devices/cpu/ready_queue.h"

#include <algorithm>

#include "sync/asymmetric_fence.h"

namespace depengine::detail {
namespace {

std::atomic<std::uint64_t> g_next_queue_id{1};

// Which ring this thread owns in each of the last few queues it pushed to.
struct RingCache {
  static constexpr int kWays = 8;
  std::uint64_t ids[kWays] = {};
  void* rings[kWays] = {};
  int next_victim = 0;
};
thread_local RingCache t_ring_cache;

}  // namespace

ReadyQueue::ReadyQueue(std::size_t consumers)
    : consumers_(consumers), id_(g_next_queue_id.fetch_add(1, std::memory_order_relaxed)) {
  // Before any push or worker can use the fence.
  AsymmetricFence::init();
}

ReadyQueue::~ReadyQueue() {
  for (auto& ring : rings_) delete ring.load(std::memory_order_relaxed);
}

ReadyQueue::Ring* ReadyQueue::my_ring() {
  RingCache& cache = t_ring_cache;
  for (int i = 0; i < RingCache::kWays; ++i) {
    if (cache.ids[i] == id_) return static_cast<Ring*>(cache.rings[i]);
  }
  Ring* ring = nullptr;
  {
    std::lock_guard lock(rings_mutex_);
    const std::size_t n = ring_count_.load(std::memory_order_relaxed);
    if (n < kMaxRings) {
      ring = new Ring;
      rings_[n].store(ring, std::memory_order_release);
      ring_count_.store(n + 1, std::memory_order_release);
    }
  }
  // A thread evicted from the cache gets a fresh ring next time; its old
  // ring is still drained by the consumers.
  const int way = cache.next_victim;
  cache.next_victim = (way + 1) % RingCache::kWays;
  cache.ids[way] = ring ? id_ : 0;
  cache.rings[way] = ring;
  return ring;
}

std::size_t ReadyQueue::push(OpBlock* op) {
  if (op->priority != 0) {
    std::lock_guard lock(heap_mutex_);
    op->sequence = heap_sequence_++;
    heap_.push(op);
    if (op->priority > 0) heap_positive_.fetch_add(1, std::memory_order_relaxed);
    return heap_size_.fetch_add(1, std::memory_order_seq_cst) + 1;
  }
  return push_plain(&op, 1);
}

std::size_t ReadyQueue::push_plain(OpBlock* const* ops, std::size_t count) {
  Ring* ring = my_ring();
  // One look at the consumer's index for the whole batch.
  const std::size_t pushed = ring ? ring->queue.push(ops, count) : 0;
  std::size_t backlog = 0;
  if (pushed != 0) {
    // The ops are published before the hint and the caller's count of
    // active workers are read; a sleeping worker pairs this with heavy().
    AsymmetricFence::light();
    if (!ring->maybe_nonempty.load(std::memory_order_relaxed)) {
      ring->maybe_nonempty.store(true, std::memory_order_relaxed);
    }
    backlog = kRingCapacity - ring->queue.write_available();
  }
  if (pushed == count) return backlog;
  const std::size_t rest = count - pushed;
  std::lock_guard lock(spill_mutex_);
  spill_.insert(spill_.end(), ops + pushed, ops + count);
  return backlog + spill_size_.fetch_add(rest, std::memory_order_seq_cst) + rest;
}

std::size_t ReadyQueue::pop_ring(Ring& ring, OpBlock** out, std::size_t max, bool& more) {
  // Reads first: a ring that is empty costs no write to its consumer flag.
  if (!ring.maybe_nonempty.load(std::memory_order_relaxed)) return 0;
  const std::size_t available = ring.queue.read_available();
  if (available == 0) return 0;
  if (ring.consumer_busy.exchange(true, std::memory_order_acquire)) return 0;
  // Take a share of what is queued, not all of it: other workers get theirs.
  // `available` may be stale by now; the pop takes what is really there.
  const std::size_t n = ring.queue.pop(out, std::clamp<std::size_t>(available / consumers_, 1, max));
  more = ring.queue.read_available() != 0;
  ring.consumer_busy.store(false, std::memory_order_release);
  return n;
}

std::size_t ReadyQueue::pop_rings(OpBlock** out, std::size_t max, bool& more) {
  const std::size_t n = ring_count_.load(std::memory_order_acquire);
  if (n == 0) return 0;
  // Start at a rotating ring so that consumers spread over producers; the
  // rotation is per thread, not a shared counter every pop would contend on.
  thread_local std::size_t rotation = 0;
  const std::size_t start = rotation++ % n;
  for (std::size_t i = 0; i < n; ++i) {
    Ring* ring = rings_[(start + i) % n].load(std::memory_order_acquire);
    if (std::size_t got = pop_ring(*ring, out, max, more)) return got;
  }
  return 0;
}

std::size_t ReadyQueue::pop_spill(OpBlock** out, std::size_t max) {
  if (spill_size_.load(std::memory_order_seq_cst) == 0) return 0;
  std::lock_guard lock(spill_mutex_);
  // A share, as from a ring: a frontend that outran the workers by a ring's
  // worth leaves them thousands of ops here.
  const std::size_t n = std::min(std::clamp<std::size_t>(spill_.size() / consumers_, 1, max), spill_.size());
  std::copy_n(spill_.begin(), n, out);
  spill_.erase(spill_.begin(), spill_.begin() + static_cast<std::ptrdiff_t>(n));
  spill_size_.fetch_sub(n, std::memory_order_relaxed);
  return n;
}

OpBlock* ReadyQueue::pop_heap(bool positive_only) {
  if ((positive_only ? heap_positive_ : heap_size_).load(std::memory_order_seq_cst) == 0) return nullptr;
  std::lock_guard lock(heap_mutex_);
  if (heap_.empty() || (positive_only && heap_.top()->priority <= 0)) return nullptr;
  OpBlock* op = heap_.top();
  heap_.pop();
  if (op->priority > 0) heap_positive_.fetch_sub(1, std::memory_order_relaxed);
  heap_size_.fetch_sub(1, std::memory_order_relaxed);
  return op;
}

std::size_t ReadyQueue::pop(OpBlock** out, std::size_t max, bool& more, Take take) {
  more = false;
  std::size_t got = 0;
  OpBlock* op = pop_heap(/*positive_only=*/true);
  if (op == nullptr && take != Take::positive) {
    if (std::size_t from_rings = pop_rings(out, max, more)) return from_rings;
    got = pop_spill(out, max);
    if (got == 0 && take == Take::all) op = pop_heap(/*positive_only=*/false);
  }
  if (op != nullptr) {
    out[0] = op;
    got = 1;
  }
  if (got == 0) return 0;
  more = heap_size_.load(std::memory_order_relaxed) != 0 || spill_size_.load(std::memory_order_relaxed) != 0;
  return got;
}

bool ReadyQueue::queued_after_retiring() {
  const std::size_t n = ring_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    Ring* ring = rings_[i].load(std::memory_order_acquire);
    if (ring->maybe_nonempty.load(std::memory_order_relaxed) && ring->queue.read_available() == 0) {
      ring->maybe_nonempty.store(false, std::memory_order_relaxed);
    }
  }
  // A push that read a hint before it was cleared, or the count of active
  // workers before our caller lowered it, is visible from here on.
  AsymmetricFence::heavy();
  for (std::size_t i = 0; i < n; ++i) {
    Ring* ring = rings_[i].load(std::memory_order_acquire);
    if (ring->queue.read_available() != 0) ring->maybe_nonempty.store(true, std::memory_order_relaxed);
  }
  return queued_now();
}

bool ReadyQueue::queued_now() const {
  if (heap_size_.load(std::memory_order_relaxed) != 0 || spill_size_.load(std::memory_order_relaxed) != 0) return true;
  const std::size_t n = ring_count_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i) {
    if (rings_[i].load(std::memory_order_acquire)->queue.read_available() != 0) return true;
  }
  return false;
}

}  // namespace depengine::detail
