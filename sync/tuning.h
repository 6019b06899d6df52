#pragma once
// Every number the engine is tuned by — spin lengths, periods, batch sizes,
// slot counts — in one place, each with what it trades. The figures that
// chose them, and how to measure them again, are in docs/performance.md.
// On the ground floor so that every layer can use them; they are policy,
// and the mechanisms that use them work with any positive value.

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace depengine::detail::tuning {

// ---------------------------------------------------------------- batched pushes (engine/push_buffer.h)

/// A batch is sealed at this many ops: more amortises registration further,
/// but holds ops back longer while a frontend streams.
inline constexpr std::size_t kBatchMaxOps = 32;
/// ...or at this many variables, whose locks a registration holds together.
inline constexpr std::size_t kBatchMaxVars = 16;
/// Batch slots per frontend (one stays free): enough to keep pushing while
/// it leaves registration to the workers (4 cost fan_out_in more than it gained).
inline constexpr std::size_t kBatchSlots = 16;

// ---------------------------------------------------------------- the flush timer (engine/flush_timer.h)

/// How long an op may wait in a batch nothing else flushes: one to two
/// periods. Shorter wakes a thread on a busy core more often.
inline constexpr auto kFlushPeriod = std::chrono::microseconds(200);
/// The period grows to this while ticks find batches flushed by others (a
/// streaming frontend), so that the timer stays out of the way.
inline constexpr auto kMaxFlushPeriod = std::chrono::microseconds(800);

/// Beside busy neighbours, ops a frontend's pushes made ready wait for its
/// next blocking call (engine/held_ops.h) while it pushes at least this many
/// ops per microsecond, a rate only a loop of small pushes keeps up (it
/// blocks, or meets back-pressure, within milliseconds)...
inline constexpr double kHeldOpsStreamingPushesPerUs = 1.0;
/// ...or for at most this long, below the time slices neighbours take...
inline constexpr auto kHeldOpsMaxWait = std::chrono::milliseconds(2);
/// ...and while fewer ops than this are in flight (the default back-pressure
/// bound), for a frontend that never blocks.
inline constexpr std::int64_t kHeldOpsMaxInFlight = 1 << 16;
/// Past this many ops in flight, a frontend whose ops are held hands them to
/// a worker and yields its core while they run (engine/threaded_engine.cpp):
/// their lines are still in the caches (some 150 KiB of blocks and entries)...
inline constexpr std::int64_t kHeldBurst = 512;
/// ...unless the workers complete nothing for this long (a woken worker took
/// up to 90 µs to run on the 2-core VM; an op may wait for the frontend).
inline constexpr auto kHeldBurstStall = std::chrono::microseconds(300);
/// Such a stall counts as a long op (not waited for again until an op
/// completes) when the engine's workers ran for at least this share
/// of it; a worker off its core for the stall runs for none of it.
inline constexpr double kHeldBurstBusyShare = 0.25;
/// Queued ops left to the active workers (devices/cpu/cpu_executor.h) get
/// one more worker (past the cap beside busy neighbours) when, over a window
/// this long, the active ones completed none or only ops of kLongOp or more
/// on average: a hand-off costs a fraction of such ops, and ops may wait for
/// each other. Well above the time slices a busy neighbour takes from a
/// worker (3 ms), which slow the count of short ops by half at most.
inline constexpr auto kQueueWatchWindow = std::chrono::milliseconds(5);

// ---------------------------------------------------------------- waiting for batch slots (engine/threaded_engine.cpp)

/// How long a frontend with a core of its own spins for a registrant to free
/// a slot before sleeping on its lock.
inline constexpr auto kRoomWaitSpin = std::chrono::microseconds(15);
/// How long a frontend without a spare core, which a worker may need, yields
/// for a slot.
inline constexpr auto kRoomWaitYield = std::chrono::microseconds(60);

/// How long a frontend over the bound of ops in flight spins for the workers
/// to complete a quarter of them before sleeping: about that many small ops'
/// time, so that a bounded run-ahead costs no wake-up per wait.
inline constexpr auto kBackPressureSpin = std::chrono::microseconds(50);

/// A frontend checks back-pressure every this many pushes (at most an
/// eighth of the bound): a division per push would cost more than the check saves.
inline constexpr std::size_t kBackPressureCheckInterval = 64;
/// ...and, once per this many of those checks, whether it shares a CPU with
/// an active worker while another CPU is free of them (WorkerPlacement).
inline constexpr std::size_t kBackPressureChecksPerStepOff = 4;

// ---------------------------------------------------------------- dispatch and the CPU workers (devices/cpu/)

/// Ready plain CPU ops handed to the CPU device in one call.
inline constexpr std::size_t kDispatchGroup = 32;
/// Ops a worker takes from the ready queue at once.
inline constexpr std::size_t kWorkerBatch = 16;
/// How long an idle worker keeps looking for work before giving its thread
/// back to oneTBB: bridges the gap between two pushes of a busy frontend,
/// short enough that an idle engine goes quiet at once.
inline constexpr auto kWorkerIdleSpin = std::chrono::microseconds(50);
/// A thread helping in wait_all with ops queued unattended (beside busy
/// neighbours) starts a worker for them once the ops it runs take this long
/// on average: a wake-up costs a fraction of such an op, while small ops
/// run fastest on this thread alone.
inline constexpr auto kLongOp = std::chrono::microseconds(20);
/// The CPU ops a completion makes ready beside its continuation stay with
/// the completing worker (devices/cpu/kept_ops.h) when they and the
/// completed op declare data (PushOptions::bytes), up to this many per
/// worker: a completion in a training step makes three or four ready (a
/// layer's gradients and its input's), and any one handed away may carry the
/// chain, and its data, to another core.
inline constexpr int kKeptOpsPerWorker = 4;
/// ...after an op that ran under this long, and for this long at most before
/// an idle worker may take them: well beyond the small ops whose data they
/// keep warm (2-8 µs), a small share of a long op's time, whose successors
/// go to idle workers to run in parallel.
inline constexpr auto kKeptOpWait = std::chrono::microseconds(10);
/// An op delivered to an idle worker's mailbox (devices/cpu/worker_mailboxes.h)
/// is another idle worker's to take once its receiver has not been seen
/// spinning for this long: a running spinner looks every round (under 1 µs,
/// a yield on a free core about as long), one the kernel took off its core
/// is away for a slice.
inline constexpr auto kStaleSpinner = std::chrono::microseconds(20);
/// How long a worker out of work beside busy threads sleeps, for a submit
/// to hand it work again, before giving its thread back to oneTBB
/// (devices/cpu/parked_workers.h): longer than a frontend's usual gap
/// between bursts of pushes; the worker's task holds its thread meanwhile.
inline constexpr auto kWorkerPark = std::chrono::milliseconds(50);
/// The slice a CPU worker's thread asks the kernel for (sync/short_slice.h):
/// the shortest Linux grants, so that the yields of oneTBB's idle loop do
/// not push the thread's turn back by milliseconds beside busy threads.
inline constexpr auto kWorkerSlice = std::chrono::microseconds(100);
/// An idle worker yields every this many rounds (about every 2 µs).
inline constexpr unsigned kWorkerRoundsPerYield = 8;
/// At most one worker moves off a CPU it shares with another per this long
/// (devices/cpu/worker_placement.h): a move is two system calls and a
/// migration, once per burst of work is enough, and on a busy machine
/// moving at every start cost the contended core_bench 20-30%.
inline constexpr auto kWorkerMoveGap = std::chrono::milliseconds(2);
/// A running worker looks at its CPU once per this many ops, for a move of
/// the scheduler's onto another worker's CPU (devices/cpu/worker_placement.h):
/// a look costs a few nanoseconds, an op at least forty.
inline constexpr unsigned kWorkerOpsPerPlacementCheck = 16;
/// A started worker that has not begun to run after this long waits, most
/// likely, behind a running worker on its CPU: that one yields between two
/// ops (devices/cpu/late_starts.h). Well above the 90 µs a woken thread
/// took to run on an idle vCPU of the 2-core VM.
inline constexpr auto kLateStart = std::chrono::microseconds(200);

// ---------------------------------------------------------------- waiting (sync/)

/// How long a blocking call spins before sleeping in the kernel: the answer
/// is often that close.
inline constexpr auto kWaitSignalSpin = std::chrono::microseconds(20);
/// A blocking call with a core of its own (fewer workers than cores, no busy
/// neighbours) spins on, up to kProgressSpin, while the workers complete an
/// op every kProgressWindow: the epoch of a training loop of small ops,
/// after which a sleeping waiter, woken late, would also leave the workers
/// idle until its next pushes. Ops longer than the window end the spin,
/// where a wake-up costs them little.
inline constexpr auto kProgressSpin = std::chrono::milliseconds(3);
inline constexpr auto kProgressWindow = std::chrono::microseconds(50);
/// A spinner whose awaited threads made no progress for this long takes
/// them for not running (sync/progress_watch.h): a running worker completes
/// a small op every fraction of a microsecond, a descheduled one nothing for
/// a time slice. Above the few microseconds a vCPU of the development VM
/// sometimes pauses. Workers all in ops longer than this read as stalled
/// too: the frontend then registers the batch itself, which costs little.
inline constexpr auto kStallWindow = std::chrono::microseconds(10);
/// A spin round takes well under a microsecond; one that took this long lost
/// its core to another thread (sync/spin_wait.h). Below a scheduler's time
/// slice, which a busy neighbour takes; above what interrupts and the other
/// threads of a quiet engine take (at 30 µs such false losses cost the quiet
/// VM 25-60% on fan_out_in, stencil_1d and random_rw).
inline constexpr auto kLostCoreRound = std::chrono::microseconds(250);
/// After a spinner lost its core, the process's engine threads block without
/// spinning for this long, doubled on each loss in a row up to
/// kContentionHoldDoublings times (5 ms to 0.64 s): a busy neighbour costs a
/// probe rarely, and a quiet machine is found again within a second.
inline constexpr auto kContentionHold = std::chrono::milliseconds(5);
inline constexpr int kContentionHoldDoublings = 7;
/// Other processes' average use of the cores from which they count as busy
/// neighbours (sync/machine_load.h), judged over windows of at least
/// kNeighbourWindow: /proc/stat counts in ticks of 10 ms.
inline constexpr double kNeighbourCores = 0.5;
inline constexpr auto kNeighbourWindow = std::chrono::milliseconds(200);
/// How long a ShortLock's waiter spins before it yields: its holders keep it
/// for a few stores.
inline constexpr auto kShortLockSpin = std::chrono::nanoseconds(700);
/// How long a SpinLock's waiter spins before it sleeps on the lock word: a
/// dependency-tracking section is a few pointer updates.
inline constexpr auto kSpinLockSpin = std::chrono::nanoseconds(1400);

}  // namespace depengine::detail::tuning
