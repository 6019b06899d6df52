#pragma once
// VarState: one variable's version queue — the operations that touch it, in
// push order — and its error. Pure mechanism: nothing here knows threads,
// executors or streams beyond the opaque Fence.

#include <atomic>
#include <cstdint>
#include <exception>
#include <string>

#include "depengine/device.h"
#include "engine/op_block.h"
#include "engine/spin_lock.h"

namespace depengine::detail {

// Aligned to lines, and ordered so that the first line holds everything a
// CPU op's push and completion touch: neighbouring variables never share a
// line, and a push and a completion on another core exchange one line.
struct alignas(64) VarState {
  SpinLock lock;
  // Identity, owned by VarTable (find() reads it on every push).
  std::atomic<std::uint32_t> generation{1};
  std::atomic<bool> delete_pushed{false};
  // Error: set by a failed write, cleared by the blocking call that reports it.
  std::atomic<bool> failed{false};
  bool mixed_launch = false;  // launched active entries run on several devices

  int active = 0;         // granted, not completed
  int active_writes = 0;  // of those, writes
  int active_launched = 0;
  int active_launched_writes = 0;

  // The queue holds every entry not yet completed. Granted entries form a
  // prefix; `first_ungranted` starts the rest.
  Entry* head = nullptr;
  Entry* tail = nullptr;
  Entry* first_ungranted = nullptr;

  // Cold: stream devices, failures, names.
  Device launch_device;      // where the launched active entries run, unless mixed
  std::exception_ptr error;  // guarded by lock
  std::uint32_t slot = 0;
  std::string name;
};

}  // namespace depengine::detail
