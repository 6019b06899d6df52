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
#include "sync/spin_lock.h"

namespace depengine::detail {

class PushBuffer;

// Two lines. The first holds everything a CPU op's registration and
// completion touch under the lock: neighbouring variables never share a line,
// and a registration and a completion on another core exchange one line. The
// second is the frontends' own: the lookup (find() reads the generation on
// every push) and the batching of pushes hit their own cache instead of
// waiting for the line a worker holds to take the lock.
struct alignas(64) VarState {
  SpinLock lock;
  // Error: set by a failed write, cleared by the blocking call that reports it.
  std::atomic<bool> failed{false};
  bool mixed_launch = false;  // launched active entries run on several devices
  // A graph's replays hold this variable without queue entries
  // (engine/var_adoption.h); changed under `lock` and the adoption's mutex.
  bool adopted = false;

  int active = 0;         // granted, not completed
  int active_writes = 0;  // of those, writes
  int active_launched = 0;
  int active_launched_writes = 0;

  // The queue holds every entry not yet completed. Granted entries form a
  // prefix; `first_ungranted` starts the rest.
  Entry* head = nullptr;
  Entry* tail = nullptr;
  Entry* first_ungranted = nullptr;
  Device launch_device;  // where the launched active entries run, unless mixed
  std::exception_ptr error;  // written only when a write fails

  // Identity, owned by VarTable. The generation is odd while the slot holds a
  // live variable and even while it is free (0: never used), so that no
  // handle names a slot the table did not hand out; it changes under `lock`
  // too, for the registration check (see VarTable::is_current).
  alignas(64) std::atomic<std::uint32_t> generation{0};
  std::atomic<bool> delete_pushed{false};
  std::uint32_t slot = 0;
  // Batched pushes (PushBuffer): the buffer that may hold operations on this
  // variable not yet in its queue, and the last such entry. Frontends only.
  std::atomic<PushBuffer*> claim{nullptr};
  Entry* batch_tail = nullptr;  // guarded by the claiming buffer's lock
  std::string name;
};

static_assert(sizeof(VarState) == 128, "VarState: one line for the queue, one read-mostly");

}  // namespace depengine::detail
