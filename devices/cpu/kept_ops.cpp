#include "devices/cpu/kept_ops.h"

#include <algorithm>

namespace depengine::detail {

KeptOps::KeptOps(int workers)
    : count_(std::max(workers, 1)), slots_(std::make_unique<Slots[]>(static_cast<std::size_t>(count_))) {}

bool KeptOps::keep(int worker, OpBlock* op, SpinClock::time_point now) {
  Slots& slots = slots_[worker];
  // Only the keeper fills its slots, so a free one stays free until it does.
  for (int i = 0; i < kSlots; ++i) {
    if (slots.op[i].load(std::memory_order_relaxed) != nullptr) continue;
    // The time first: a thief that sees the op sees when it was kept.
    slots.since[i].store(now.time_since_epoch().count(), std::memory_order_relaxed);
    slots.op[i].store(op, std::memory_order_release);
    return true;
  }
  return false;
}

OpBlock* KeptOps::take_back(int worker) {
  Slots& slots = slots_[worker];
  for (int i = 0; i < kSlots; ++i) {
    // A load first: most chains end with nothing kept.
    if (slots.op[i].load(std::memory_order_relaxed) == nullptr) continue;
    if (OpBlock* op = slots.op[i].exchange(nullptr, std::memory_order_acquire)) return op;
  }
  return nullptr;
}

OpBlock* KeptOps::steal(int thief, SpinClock::time_point kept_by) {
  for (int w = 0; w < count_; ++w) {
    if (w == thief) continue;
    Slots& slots = slots_[w];
    for (int i = 0; i < kSlots; ++i) {
      OpBlock* op = slots.op[i].load(std::memory_order_acquire);
      if (op == nullptr || slots.since[i].load(std::memory_order_relaxed) > kept_by.time_since_epoch().count()) {
        continue;
      }
      // Lost to the keeper or another thief: the slot's op is theirs.
      if (slots.op[i].compare_exchange_strong(op, nullptr, std::memory_order_acquire, std::memory_order_relaxed)) {
        return op;
      }
    }
  }
  return nullptr;
}

bool KeptOps::any() const {
  for (int w = 0; w < count_; ++w) {
    for (int i = 0; i < kSlots; ++i) {
      if (slots_[w].op[i].load(std::memory_order_relaxed) != nullptr) return true;
    }
  }
  return false;
}

}  // namespace depengine::detail
