#include "engine/push_buffer.h"

#include <algorithm>

#include "engine/prefetch.h"

namespace depengine::detail {

PushBuffer::PushBuffer() { runs_.reserve(kMaxVars + 8); }

bool PushBuffer::claim(const OpBlock& op) {
  for (const Entry& e : op.entries) {
    PushBuffer* holder = e.var->claim.load(std::memory_order_acquire);
    if (holder == this) continue;
    // A claim taken here and left unused when a later variable is held
    // elsewhere is harmless: this buffer has nothing on that variable.
    if (holder != nullptr ||
        !e.var->claim.compare_exchange_strong(holder, this, std::memory_order_acq_rel)) {
      return false;
    }
  }
  return true;
}

void PushBuffer::add(OpBlock* op) {
  op->pending.store(static_cast<int>(op->entries.size()), std::memory_order_relaxed);
  for (Entry& e : op->entries) {
    VarState& var = *e.var;
    // The entry is fresh from make_op: unlinked, not launched.
    if (var.batch_tail == nullptr) {
      runs_.push_back({&var, &e});
      // The flush locks it: let the line, which a worker completing an
      // earlier op may hold, arrive meanwhile.
      prefetch_for_write(&var);
    } else {
      var.batch_tail->set_next(&e);
      e.prev = var.batch_tail;
    }
    var.batch_tail = &e;
  }
  ++ops_;
  // Before the op can be flushed, and so before it can complete.
  pushed_.store(pushed_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

std::size_t PushBuffer::flush(ReadyList& ready) {
  const std::size_t flushed = ops_;
  if (flushed == 0) return 0;
  if (runs_.size() > 1) {
    std::sort(runs_.begin(), runs_.end(), [](const Run& a, const Run& b) { return a.var < b.var; });
  }
  for (const Run& run : runs_) run.var->lock.lock();
  for (const Run& run : runs_) {
    dependency::splice(*run.var, *run.first, *run.var->batch_tail, ready);
    run.var->batch_tail = nullptr;
  }
  for (const Run& run : runs_) run.var->lock.unlock();
  ready.settle_registered();
  runs_.clear();
  ops_ = 0;
  ++flushes_;
  return flushed;
}

bool PushBuffer::stale() {
  const bool stale = ops_ != 0 && flushes_ == flushes_seen_;
  flushes_seen_ = flushes_;
  return stale;
}

}  // namespace depengine::detail
