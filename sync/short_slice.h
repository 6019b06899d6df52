#pragma once
// use_short_slice: asks the kernel to schedule the calling thread in
// short slices, so that its own waits cannot leave it starved for long
// beside threads that keep the cores busy.
//
// Linux's EEVDF scheduler runs the eligible thread with the earliest
// deadline, a slice after it last became runnable, and each sched_yield
// moves the yielding thread's deadline back by one slice. oneTBB's idle
// thread yields in a loop before it sleeps: with the default slice, beside
// two busy loops on the 2-core VM, a task enqueued meanwhile waited until
// the busy threads' deadlines had passed its own, 100-150 ms (depbench's
// training_step ran at 0.06-0.15x of sync in about half the processes).
// With a 0.1 ms slice, the shortest the kernel grants, those yields move
// the deadline back by a fraction of a tick, and the task runs within one.
// Only there: beside a runnable thread, a thread with a short slice takes
// its turns in short pieces, and with two workers and a frontend on the
// 2-core VM the workers running ops so measured 1.5-1.9x slower.
//
//   use_short_slice(true);   // a worker task ends, back to oneTBB's idle loop
//   use_short_slice(false);  // a worker task starts: the default slice
//
// A system call only when the calling thread's slice changes (about 1.5 µs
// on the 2-core VM).
//
// sched_setattr's sched_runtime for SCHED_OTHER (Linux 6.12 and later);
// earlier kernels ignore it, and elsewhere it is a no-op.

namespace depengine::detail {

/// Short slice (true) or the kernel's default (false) for the calling thread.
void use_short_slice(bool short_slice);

}  // namespace depengine::detail
