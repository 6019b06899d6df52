#include "engine/dependency_tracker.h"

#include <algorithm>

namespace depengine::detail::dependency {
namespace {

bool all_active_launched_on(const VarState& var, Device device) {
  return var.active == var.active_launched && !var.mixed_launch && var.launch_device == device;
}

bool all_active_writes_launched_on(const VarState& var, Device device) {
  return var.active_writes == var.active_launched_writes && !var.mixed_launch &&
         var.launch_device == device;
}

void add_fence(std::vector<Fence>& fences, const Fence& fence) {
  const bool known = std::any_of(fences.begin(), fences.end(), [&](const Fence& f) {
    return f.event == fence.event;
  });
  if (!known) fences.push_back(fence);
}

// Whether `entry` (the first ungranted one) may start now, and if it must
// wait for fences of launched predecessors, collects them.
bool try_grant(VarState& var, Entry& entry) {
  if (entry.write ? var.active == 0 : var.active_writes == 0) return true;
  OpBlock& op = *entry.op;
  if (!op.device_uses_fences) return false;
  const bool early = entry.write ? all_active_launched_on(var, op.device)
                                 : all_active_writes_launched_on(var, op.device);
  if (!early) return false;
  // Only the last write and the reads after it: everything earlier is
  // ordered before that write already. Walking the whole queue would cost
  // O(n) per entry on a long chain launched ahead.
  for (Entry* e = entry.prev; e != nullptr; e = e->prev) {
    if (e->write || entry.write) add_fence(op.fences_of(entry), e->op->launch_fence);
    if (e->write) break;
  }
  return true;
}

// The entry is granted: it sees the variable's error as it stands at its
// turn. A wait reports the error and clears it right here, in queue order,
// so that the entries granted after it do not see it (as in naive mode).
void take_input_error(VarState& var, Entry& entry) {
  if (entry.op->kind == OpKind::Wait) {
    entry.error = std::move(var.error);
    var.error = nullptr;
    var.failed.store(false, std::memory_order_release);
  } else {
    set_input_error(entry, var.error);
  }
}

// Grants entries from the first ungranted one on while they can start, and
// notes their ops in `ready` (null: only `entry`'s own, which the caller
// settles itself, can be granted).
void grant_ready_entries(VarState& var, ReadyList* ready) {
  while (Entry* entry = var.first_ungranted) {
    // While an active write has not been launched, nothing more can start:
    // known from this line alone, without the next entry's line and its
    // op's, which the pushing thread wrote on another core (a chain's
    // completion would otherwise miss on both to learn it).
    if (var.active_writes != var.active_launched_writes) return;
    if (!try_grant(var, *entry)) return;
    // `failed` mirrors `error` under the lock and shares the hot line.
    if (var.failed.load(std::memory_order_relaxed)) [[unlikely]] take_input_error(var, *entry);
    ++var.active;
    if (entry->write) ++var.active_writes;
    var.first_ungranted = entry->next;
    if (ready) ready->granted(entry->op);
  }
}

// Links `first` .. `last` (already linked to one another) at the tail of the
// queue; returns whether they start its ungranted part, from which the
// caller then grants.
bool link_at_tail(VarState& var, Entry& first, Entry& last) {
  first.prev = var.tail;
  if (var.tail) {
    var.tail->set_next(&first);
  } else {
    var.head = &first;
  }
  var.tail = &last;
  if (var.first_ungranted != nullptr) return false;
  var.first_ungranted = &first;
  return true;
}

}  // namespace

bool append(VarState& var, Entry& entry) {
  entry.set_next(nullptr);
  entry.launched = false;
  if (!link_at_tail(var, entry, entry)) return false;
  grant_ready_entries(var, nullptr);
  return var.first_ungranted == nullptr;
}

void splice(VarState& var, Entry& first, Entry& last, ReadyList& ready) {
  if (link_at_tail(var, first, last)) grant_ready_entries(var, &ready);
}

void mark_launched(VarState& var, Entry& entry, ReadyList& ready) {
  entry.launched = true;
  if (var.active_launched == 0) {
    var.launch_device = entry.op->device;
  } else if (var.launch_device != entry.op->device) {
    var.mixed_launch = true;
  }
  ++var.active_launched;
  if (entry.write) ++var.active_launched_writes;
  grant_ready_entries(var, &ready);
}

void set_error(VarState& var, const std::exception_ptr& error) {
  var.error = error;
  var.failed.store(true, std::memory_order_release);
}

void hold(VarState& var, Entry& entry) {
  entry.set_next(nullptr);
  entry.launched = false;
  entry.prev = nullptr;
  var.head = var.tail = &entry;
  ++var.active;
  if (entry.write) ++var.active_writes;
}

void propagate_failure(VarState& var, const Entry& entry, const std::exception_ptr& error) {
  set_error(var, error);
  // Entries granted behind the failed write (early, on its device) have not
  // checked their inputs yet: they wait for its fence.
  for (Entry* e = entry.next; e != var.first_ungranted; e = e->next) set_input_error(*e, error);
}

void remove_completed(VarState& var, Entry& entry, ReadyList& ready) {
  if (entry.prev) {
    entry.prev->set_next(entry.next);
  } else {
    var.head = entry.next;
  }
  (entry.next ? entry.next->prev : var.tail) = entry.prev;
  --var.active;
  if (entry.write) --var.active_writes;
  if (entry.launched) {
    --var.active_launched;
    if (entry.write) --var.active_launched_writes;
    if (var.active_launched == 0) var.mixed_launch = false;
  }
  grant_ready_entries(var, &ready);
}

}  // namespace depengine::detail::dependency
