#pragma once
// VarAdoption: the variables that only one graph's replays touch, which the
// graph holds without a version-queue entry per replay.
//
// A replay is one op holding every variable its graph touches, and each of
// its entries costs a lock, a link and an unlink, and moves the variable's
// line between the registering and the completing core twice. But replays
// of one graph are ordered among themselves by the graph's sequence
// variable, so a variable that nothing else touches needs no entry: a
// replay that finds the variable's queue empty adopts it
// (VarState::adopted), and the replays after it skip it. Any other op
// that registers on an adopted variable evicts it first: the variable
// leaves the graph, and while replays are in flight one stand-in entry,
// granted, holds the variable for them until the newest of them completes.
// A replay that finds the queue empty again adopts it again.
//
// Locks: the adoption's mutex before variables' locks (a replay's
// registration). Eviction starts from a variable's lock and only tries the
// mutex, so the order never inverts; `adopted` and the adoption's own flag
// change only under both, and either one tells under its lock.

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/op_block.h"
#include "engine/var_state.h"

namespace depengine::detail {

/// One variable of a graph's replay op, sorted by address (the lock order).
struct ReplayEntry {
  VarState* state;
  std::uint32_t generation;
  std::uint32_t position;  // in the replay op's lists (reads, then writes)
  bool write;
};

class VarAdoption {
 public:
  /// `entries` outlives the adoption; `adoptable[i]` says whether entries[i]
  /// may be adopted (not the graph's sequence variable).
  VarAdoption(const std::vector<ReplayEntry>& entries, std::vector<bool> adoptable);
  /// Lets go of the variables still adopted (no replay in flight).
  ~VarAdoption();
  VarAdoption(const VarAdoption&) = delete;
  VarAdoption& operator=(const VarAdoption&) = delete;

  const std::vector<ReplayEntry>& entries() const { return entries_; }
  std::mutex& mutex() { return mutex_; }

  // Under mutex():
  bool adopted(std::size_t i) const { return adopted_[i] != 0; }
  /// Adopts the variable at `position` of the replay op's lists if it may
  /// be and its queue is empty (its lock held); returns whether it did.
  bool try_adopt(std::uint32_t position);
  /// `replay` registered, holding the adopted variables from now on.
  void registered(OpBlock* replay) { in_flight_.push_back(replay); }

  /// `replay` (the oldest in flight) completed; the mutex is not held.
  /// Returns the stand-ins it released, for the caller to remove from their
  /// queues and then free.
  std::vector<std::unique_ptr<Entry>> completed(const OpBlock* replay);

  /// Evicts `var` from the graph that adopted it, if any; no locks held.
  static void evict(VarState& var);

 private:
  // The mutex and the variable's lock held; the variable is this one's.
  void evict_locked(VarState& var);

  struct StandIn {
    const OpBlock* released_by;
    std::unique_ptr<Entry> entry;
  };

  const std::vector<ReplayEntry>& entries_;
  const std::vector<bool> adoptable_;
  std::vector<std::uint32_t> index_of_position_;  // into entries_
  std::vector<std::uint8_t> adopted_;
  std::mutex mutex_;
  std::deque<OpBlock*> in_flight_;  // registered replays, oldest first
  std::vector<StandIn> stand_ins_;
};

}  // namespace depengine::detail
