#include "devices/cpu/worker_mailboxes.h"

#include <algorithm>

namespace depengine::detail {

WorkerMailboxes::WorkerMailboxes(int boxes)
    : count_(std::max(boxes, 1)), boxes_(std::make_unique<Box[]>(static_cast<std::size_t>(count_))) {}

int WorkerMailboxes::claim() {
  for (int i = 0; i < count_; ++i) {
    std::uintptr_t expected = kFree;
    if (boxes_[i].state.compare_exchange_strong(expected, kClosed, std::memory_order_relaxed)) return i;
  }
  return -1;
}

void WorkerMailboxes::release(int box) { boxes_[box].state.store(kFree, std::memory_order_relaxed); }

OpBlock* WorkerMailboxes::take(int box) {
  std::atomic<std::uintptr_t>& state = boxes_[box].state;
  const std::uintptr_t seen = state.load(std::memory_order_acquire);
  if (seen <= kOpen) return nullptr;
  // A thief may reclaim the op meanwhile: the exchange decides whose it is.
  std::uintptr_t expected = seen;
  return state.compare_exchange_strong(expected, kClosed, std::memory_order_relaxed)
             ? reinterpret_cast<OpBlock*>(seen)
             : nullptr;
}

OpBlock* WorkerMailboxes::reclaim(int thief, SpinClock::time_point awake_by) {
  for (int i = 0; i < count_; ++i) {
    if (i == thief) continue;
    std::atomic<std::uintptr_t>& state = boxes_[i].state;
    std::uintptr_t seen = state.load(std::memory_order_relaxed);
    if (seen <= kOpen) continue;
    if (boxes_[i].awake_at.load(std::memory_order_relaxed) > awake_by.time_since_epoch().count()) continue;
    if (state.compare_exchange_strong(seen, kClosed, std::memory_order_acquire, std::memory_order_relaxed)) {
      return reinterpret_cast<OpBlock*>(seen);
    }
  }
  return nullptr;
}

OpBlock* WorkerMailboxes::close(int box) {
  const std::uintptr_t seen = boxes_[box].state.exchange(kClosed, std::memory_order_acq_rel);
  return seen > kOpen ? reinterpret_cast<OpBlock*>(seen) : nullptr;
}

std::size_t WorkerMailboxes::deliver(OpBlock* const* ops, std::size_t count) {
  // Deliverers start at different boxes, so that two of them racing for
  // one spinner do not both lose to each other on every box after it.
  thread_local unsigned rotation = 0;
  const int start = static_cast<int>(rotation++ % static_cast<unsigned>(count_));
  std::size_t delivered = 0;
  for (int i = 0; i < count_ && delivered < count; ++i) {
    std::atomic<std::uintptr_t>& state = boxes_[(start + i) % count_].state;
    std::uintptr_t expected = kOpen;
    if (state.load(std::memory_order_relaxed) != kOpen) continue;
    if (state.compare_exchange_strong(expected, reinterpret_cast<std::uintptr_t>(ops[delivered]),
                                      std::memory_order_acq_rel, std::memory_order_relaxed)) {
      ++delivered;
    }
  }
  return delivered;
}

}  // namespace depengine::detail
