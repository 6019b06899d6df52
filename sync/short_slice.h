#pragma once
// use_short_slice: asks the kernel to schedule the calling thread in short
// slices, for the time it waits in a loop that yields.
//
// Linux's EEVDF scheduler runs the eligible thread with the earliest
// deadline, and each sched_yield moves the yielding thread's deadline back
// by one slice. oneTBB's idle thread yields in a loop before it sleeps:
// beside threads that keep the cores busy, with the default slice, a task
// enqueued meanwhile waited until their deadlines had passed its own
// (100-150 ms on the 2-core VM). With a 0.1 ms slice, the shortest the
// kernel grants, the yields push the deadline back by a fraction of a tick.
// Not while running ops: beside a runnable thread a short slice takes its
// turns in short pieces.
//
//   use_short_slice(true);   // a worker task ends, back to oneTBB's idle loop
//   use_short_slice(false);  // a worker task starts: the default slice
//
// System calls (sched_getattr, then sched_setattr: about 1.5 µs on the
// 2-core VM) only when the calling thread's slice changes.
//
// sched_setattr's sched_runtime for SCHED_OTHER (Linux 6.12 and later);
// earlier kernels ignore it, and elsewhere it is a no-op.

#include <cstdint>

namespace depengine::detail {

/// Short slice (true) or the kernel's default (false) for the calling thread.
void use_short_slice(bool short_slice);

/// The kernel's struct sched_attr, for sched_getattr and sched_setattr
/// (glibc wraps neither).
struct SchedAttr {
  std::uint32_t size = sizeof(SchedAttr);
  std::uint32_t policy = 0;  // SCHED_OTHER
  std::uint64_t flags = 0;
  std::int32_t nice = 0;
  std::uint32_t priority = 0;
  std::uint64_t runtime_ns = 0;  // the slice, for SCHED_OTHER
  std::uint64_t deadline_ns = 0;
  std::uint64_t period_ns = 0;
};

}  // namespace depengine::detail
