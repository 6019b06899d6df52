#include "engine/var_adoption.h"

#include <algorithm>
#include <thread>
#include <unordered_map>

#include "engine/dependency_tracker.h"

namespace depengine::detail {

namespace {

// Which adoption holds each adopted variable (VarState::adopted says that
// one does). Looked up only to evict, so it lives beside the variables
// rather than in their lines, which have no room. Taken last, under the
// variable's lock, and nothing is locked while it is held; never destroyed,
// so that an engine destroyed at exit may still erase from it.
struct Owners {
  std::mutex mutex;
  std::unordered_map<const VarState*, VarAdoption*> of;
};
Owners& owners() {
  static Owners* const instance = new Owners;
  return *instance;
}

void set_owner(VarState& var, VarAdoption* adoption) {
  var.adopted = adoption != nullptr;
  Owners& o = owners();
  std::lock_guard lock(o.mutex);
  if (adoption) o.of[&var] = adoption;
  else o.of.erase(&var);
}

VarAdoption* owner_of(const VarState& var) {
  Owners& o = owners();
  std::lock_guard lock(o.mutex);
  const auto it = o.of.find(&var);
  return it == o.of.end() ? nullptr : it->second;
}

}  // namespace

VarAdoption::VarAdoption(const std::vector<ReplayEntry>& entries, std::vector<bool> adoptable)
    : entries_(entries),
      adoptable_(std::move(adoptable)),
      index_of_position_(entries.size()),
      adopted_(entries.size(), 0) {
  for (std::size_t i = 0; i < entries_.size(); ++i) index_of_position_[entries_[i].position] = static_cast<std::uint32_t>(i);
}

VarAdoption::~VarAdoption() {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (!adopted_[i]) continue;
    VarState& var = *entries_[i].state;
    std::lock_guard var_lock(var.lock);
    set_owner(var, nullptr);
  }
}

bool VarAdoption::try_adopt(std::uint32_t position) {
  const std::size_t i = index_of_position_[position];
  VarState& var = *entries_[i].state;
  if (!adoptable_[i] || var.head != nullptr || var.adopted) return false;
  set_owner(var, this);
  adopted_[i] = 1;
  return true;
}

std::vector<std::unique_ptr<Entry>> VarAdoption::completed(const OpBlock* replay) {
  std::vector<std::unique_ptr<Entry>> released;
  std::lock_guard lock(mutex_);
  // Replays complete in order: the sequence variable serialises them.
  if (!in_flight_.empty() && in_flight_.front() == replay) in_flight_.pop_front();
  for (auto it = stand_ins_.begin(); it != stand_ins_.end();) {
    if (it->released_by == replay) {
      released.push_back(std::move(it->entry));
      it = stand_ins_.erase(it);
    } else {
      ++it;
    }
  }
  return released;
}

void VarAdoption::evict(VarState& var) {
  for (;;) {
    std::unique_lock var_lock(var.lock);
    if (!var.adopted) return;
    VarAdoption* adoption = owner_of(var);
    // Holding the variable's lock keeps the adoption alive (its destructor
    // takes that lock to let go), but the mutex comes first in the lock
    // order: try it, and let its holder (a registering replay) finish.
    if (adoption->mutex_.try_lock()) {
      adoption->evict_locked(var);
      adoption->mutex_.unlock();
      return;
    }
    var_lock.unlock();
    std::this_thread::yield();
  }
}

void VarAdoption::evict_locked(VarState& var) {
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), &var,
                                   [](const ReplayEntry& e, const VarState* v) { return e.state < v; });
  const auto i = static_cast<std::size_t>(it - entries_.begin());
  if (!in_flight_.empty()) {
    auto entry = std::make_unique<Entry>();
    entry->place(&var, in_flight_.back(), it->write, it->position, it->generation);
    dependency::hold(var, *entry);
    stand_ins_.push_back({in_flight_.back(), std::move(entry)});
  }
  set_owner(var, nullptr);
  adopted_[i] = 0;
}

}  // namespace depengine::detail
