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

struct VarState {
  SpinLock lock;

  // The queue holds every entry not yet completed. Granted entries form a
  // prefix; `first_ungranted` starts the rest.
  Entry* head = nullptr;
  Entry* tail = nullptr;
  Entry* first_ungranted = nullptr;
  int active = 0;         // granted, not completed
  int active_writes = 0;  // of those, writes
  int active_launched = 0;
  int active_launched_writes = 0;
  Device launch_device;       // where the launched active entries run...
  bool mixed_launch = false;  // ...unless they run on several devices

  // Error: set by a failed write, cleared by the blocking call that reports it.
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // guarded by lock

  // Identity, owned by VarTable.
  std::uint32_t slot = 0;
  std::atomic<std::uint32_t> generation{1};
  std::atomic<bool> delete_pushed{false};
  std::string name;
};

}  // namespace depengine::detail
