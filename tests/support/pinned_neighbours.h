#pragma once
// PinnedNeighbours: for tests of what the engine does beside busy neighbours
// (sync/machine_load.h). While it lives, the process's verdict stays as
// given, whatever the machine does.

#include "sync/machine_load.h"

class PinnedNeighbours {
 public:
  explicit PinnedNeighbours(bool busy) { depengine::detail::MachineLoad::process().pin(busy); }
  ~PinnedNeighbours() { depengine::detail::MachineLoad::process().unpin(); }
  PinnedNeighbours(const PinnedNeighbours&) = delete;
  PinnedNeighbours& operator=(const PinnedNeighbours&) = delete;
};
