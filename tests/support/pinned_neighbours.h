#pragma once
// PinnedNeighbours: for tests of what the engine does beside busy neighbours
// (sync/machine_load.h). While it lives, the process's verdict stays as
// given (busy or not, and on how many cores), whatever the machine does.

#include <optional>

#include "sync/machine_load.h"

class PinnedNeighbours {
 public:
  explicit PinnedNeighbours(bool busy, int cores = 1) { depengine::detail::MachineLoad::process().pin(busy, cores); }
  ~PinnedNeighbours() { depengine::detail::MachineLoad::process().unpin(); }
  PinnedNeighbours(const PinnedNeighbours&) = delete;
  PinnedNeighbours& operator=(const PinnedNeighbours&) = delete;
};

// PinnedNeighboursIf: pins the verdict busy while it lives when `busy`, and
// leaves it alone otherwise: for a test parameter that runs a suite both ways.
class PinnedNeighboursIf {
 public:
  explicit PinnedNeighboursIf(bool busy) {
    if (busy) pinned_.emplace(true);
  }

 private:
  std::optional<PinnedNeighbours> pinned_;
};
