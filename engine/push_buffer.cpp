#include "engine/push_buffer.h"

#include <algorithm>

#include "engine/var_adoption.h"
#include "sync/progress_watch.h"
#include "sync/spin_wait.h"
#include "sync/prefetch.h"

namespace depengine::detail {

PushBuffer::PushBuffer(std::atomic<std::size_t>& sealed_anywhere) : sealed_anywhere_(sealed_anywhere) {
  for (Batch& batch : batches_) batch.runs.reserve(kMaxVars + 8);
}

bool PushBuffer::claim(const OpBlock& op) {
  for (const Entry& e : op.entries) {
    PushBuffer* holder = e.var->claim.load(std::memory_order_acquire);
    if (holder == this) continue;
    // A claim taken here and left unused when a later variable is held
    // elsewhere is harmless: this buffer has nothing on that variable.
    if (holder != nullptr ||
        // Sequentially consistent, for a racing delete_var: see EngineCore::stale_entry.
        !e.var->claim.compare_exchange_strong(holder, this, std::memory_order_seq_cst)) {
      return false;
    }
  }
  return true;
}

void PushBuffer::add(OpBlock* op) {
  Batch& batch = current();
  op->pending.store(static_cast<int>(op->entries.size()), std::memory_order_relaxed);
  for (Entry& e : op->entries) {
    VarState& var = *e.var;
    // The entry is fresh from make_op: unlinked, not launched.
    if (var.batch_tail == nullptr) {
      batch.runs.push_back({&var, &e, nullptr});
    } else {
      var.batch_tail->set_next(&e);
      e.prev = var.batch_tail;
    }
    var.batch_tail = &e;
  }
  ++batch.ops;
  // Before the op can be registered, and so before it can complete.
  pushed_.store(pushed_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

bool PushBuffer::seal() {
  // The acquire in sealed_count: the slot to be current next was emptied.
  if (sealed_count() + 1 == kBatches) return false;
  seal_current();
  return true;
}

void PushBuffer::seal_current() {
  Batch& batch = current();
  // The next batch starts new runs.
  for (Run& run : batch.runs) {
    run.last = run.var->batch_tail;
    run.var->batch_tail = nullptr;
  }
  sealed_end_.store(sealed_end_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  sealed_anywhere_.fetch_add(1, std::memory_order_relaxed);
}

std::size_t PushBuffer::register_sealed(ReadyList& ready) {
  if (!register_lock_.try_lock()) return 0;
  // Acquire: the batches counted are complete.
  const std::uint64_t count = sealed_end_.load(std::memory_order_acquire) - oldest_.load(std::memory_order_relaxed);
  const std::size_t registered = register_oldest(count, ready);
  register_lock_.unlock();
  return registered;
}

std::size_t PushBuffer::flush(ReadyList& ready) {
  register_lock_.lock();
  std::size_t registered = 0;
  lock_.lock();
  // Everything pushed before this call is sealed before the count is
  // taken: the current batch (making room first when every slot is taken),
  // unless its owner sealed it meanwhile, leaving a new, empty one.
  while (!empty() && sealed_count() + 1 == kBatches) {
    lock_.unlock();
    registered += register_oldest(1, ready);
    lock_.lock();
  }
  if (!empty()) seal_current();
  const std::uint64_t count = sealed_count();
  lock_.unlock();
  registered += register_oldest(count, ready);
  register_lock_.unlock();
  return registered;
}

std::size_t PushBuffer::seal_making_room(ReadyList& ready, RoomWait wait, bool* workers_stalled) {
  // Without the registration lock only once a registrant freed a slot: no
  // other thread seals (a flush empties the current batch instead).
  bool registering = false;
  bool stalled = false;
  if (!wait.for_workers || !wait_for_room(wait, stalled)) {
    registering = register_lock_.try_lock();
    // A registrant that is not running frees no slot: its lock, which sleeps, leaves it the core.
    if (!registering && (stalled || !wait_for_room(wait, stalled))) {
      register_lock_.lock();
      registering = true;
    }
  }
  const std::size_t registered = registering && sealed_count() + 1 == kBatches ? register_oldest(1, ready) : 0;
  lock_.lock();
  // Empty when another thread flushed it meanwhile.
  if (!empty()) seal_current();
  lock_.unlock();
  if (registering) register_lock_.unlock();
  if (workers_stalled != nullptr) *workers_stalled = stalled;
  return registered;
}

bool PushBuffer::wait_for_room(RoomWait wait, bool& stalled) const {
  SpinWait spin(wait.spin, wait.yield ? SpinWait::kYieldEachRound : SpinWait::kNeverYield);
  // A worker at work completes ops or registers batches (a batch of small
  // ops takes microseconds to register and completes nothing meanwhile).
  const auto progress = [&] {
    return wait.workers->completed() + registered_.load(std::memory_order_relaxed);
  };
  ProgressWatch workers(wait.workers != nullptr ? progress() : 0, spin.round_end(), tuning::kStallWindow);
  while (spin.round()) {
    if (sealed_count() + 1 < kBatches) return true;
    if (wait.workers != nullptr && !workers.moving(progress, spin.round_end())) {
      stalled = true;
      return false;
    }
  }
  return false;
}

std::size_t PushBuffer::flush_if_stale(ReadyList& ready, bool& holds_ops) {
  // A registration under way: not stale, and no wait behind a registrant
  // that may have lost its core.
  if (!register_lock_.try_lock()) {
    holds_ops = true;
    return 0;
  }
  lock_.lock();
  holds_ops = sealed_count() != 0 || !empty();
  lock_.unlock();
  const bool stale = holds_ops && registrations_ == registrations_seen_;
  registrations_seen_ = registrations_;
  register_lock_.unlock();
  if (!stale) return 0;
  holds_ops = false;
  return flush(ready);
}

std::size_t PushBuffer::register_oldest(std::uint64_t count, ReadyList& ready) {
  std::size_t registered = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    // Sealed batches are the owner's no longer, and their slot stays
    // counted until oldest_ moves past it.
    const std::uint64_t oldest = oldest_.load(std::memory_order_relaxed);
    Batch& batch = batches_[oldest % kBatches];
    const std::size_t ops = batch.ops;
    register_batch(batch, ready);
    registered += ops;
    ++registrations_;
    registered_.store(registered_.load(std::memory_order_relaxed) + ops, std::memory_order_relaxed);
    oldest_.store(oldest + 1, std::memory_order_release);
    sealed_anywhere_.fetch_sub(1, std::memory_order_relaxed);
  }
  return registered;
}

void PushBuffer::register_batch(Batch& batch, ReadyList& ready) {
  std::vector<Run>& runs = batch.runs;
  // Each lock below is an atomic instruction, which waits for the one
  // before: were the variables' lines (held by the workers that completed
  // their last ops) fetched one lock at a time, their misses would add up.
  for (const Run& run : runs) prefetch_for_write(run.var);
  // Runs are often in address order already (variables made one after the
  // other, pushed in that order), and sorting would still write them all
  // back: lines of the owner's, when a worker registers.
  const auto by_address = [](const Run& a, const Run& b) { return a.var < b.var; };
  if (!std::is_sorted(runs.begin(), runs.end(), by_address)) std::sort(runs.begin(), runs.end(), by_address);
  for (;;) {
    for (const Run& run : runs) run.var->lock.lock();
    // A variable a graph holds without entries leaves the graph first.
    const auto adopted = std::find_if(runs.begin(), runs.end(), [](const Run& r) { return r.var->adopted; });
    if (adopted == runs.end()) [[likely]] break;
    for (const Run& run : runs) run.var->lock.unlock();
    VarAdoption::evict(*adopted->var);
  }
  for (const Run& run : runs) dependency::splice(*run.var, *run.first, *run.last, ready);
  for (const Run& run : runs) run.var->lock.unlock();
  const std::size_t ready_before = ready.size();
  ready.settle_registered();
  const bool mostly_waited = 2 * (ready.size() - ready_before) < batch.ops;
  // Stored only when it changes: the owner reads this line.
  if (mostly_waited != ops_mostly_waited_.load(std::memory_order_relaxed)) {
    ops_mostly_waited_.store(mostly_waited, std::memory_order_relaxed);
  }
  runs.clear();
  batch.ops = 0;
}

}  // namespace depengine::detail
