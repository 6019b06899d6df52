#include "devices/cpu/kept_ops.h"

#include <algorithm>

namespace depengine::detail {

KeptOps::KeptOps(int workers)
    : count_(std::max(workers, 1)), slots_(std::make_unique<Slot[]>(static_cast<std::size_t>(count_))) {}

bool KeptOps::keep(int worker, OpBlock* op, SpinClock::time_point now) {
  Slot& slot = slots_[worker];
  if (slot.op.load(std::memory_order_relaxed) != nullptr) return false;
  // The time first: a thief that sees the op sees when it was kept.
  slot.since.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  slot.op.store(op, std::memory_order_release);
  return true;
}

OpBlock* KeptOps::take_back(int worker) {
  std::atomic<OpBlock*>& op = slots_[worker].op;
  // A load first: most chains end with nothing kept.
  return op.load(std::memory_order_relaxed) == nullptr ? nullptr : op.exchange(nullptr, std::memory_order_acquire);
}

OpBlock* KeptOps::steal(int thief, SpinClock::time_point kept_by) {
  for (int i = 0; i < count_; ++i) {
    if (i == thief) continue;
    Slot& slot = slots_[i];
    OpBlock* op = slot.op.load(std::memory_order_acquire);
    if (op == nullptr || slot.since.load(std::memory_order_relaxed) > kept_by.time_since_epoch().count()) continue;
    // Lost to the keeper or another thief: the slot's op is theirs.
    if (slot.op.compare_exchange_strong(op, nullptr, std::memory_order_acquire, std::memory_order_relaxed)) return op;
  }
  return nullptr;
}

bool KeptOps::any() const {
  for (int i = 0; i < count_; ++i) {
    if (slots_[i].op.load(std::memory_order_relaxed) != nullptr) return true;
  }
  return false;
}

}  // namespace depengine::detail
