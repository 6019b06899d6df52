#include "devices/cpu/cpu_executor.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "sync/engine_thread_clock.h"
#include "sync/machine_load.h"
#include "sync/short_slice.h"
#include "sync/spin_wait.h"
#include "sync/tuning.h"
#include "sync/usable_cores.h"
#include "engine/engine_core.h"

namespace depengine::detail {
namespace {

constexpr auto kIdleSpin = tuning::kWorkerIdleSpin;
constexpr unsigned kRoundsPerYield = tuning::kWorkerRoundsPerYield;
constexpr auto kLongOp = tuning::kLongOp;
constexpr auto kPark = tuning::kWorkerPark;
constexpr unsigned kOpsPerPlacementCheck = tuning::kWorkerOpsPerPlacementCheck;
constexpr auto kQueueWatchWindow = tuning::kQueueWatchWindow;
constexpr auto kKeptOpWait = tuning::kKeptOpWait;
constexpr auto kStaleSpinner = tuning::kStaleSpinner;
static_assert(kStaleSpinner >= 4 * WorkerMailboxes::kAwakeResolution, "a spinner's rounds are noted often enough");

// Ops a worker runs before it next looks at its CPU (WorkerPlacement::recheck).
thread_local unsigned t_ops_to_placement_check = kOpsPerPlacementCheck;

// Which executor's worker task runs on this thread, and its kept slots
// (KeptOps); `completing` while it completes an op, whose successors made
// ready beside the continuation may then be kept (from `ended`, the op's end).
struct KeeperThread {
  const CpuExecutor* executor = nullptr;
  int box = -1;
  bool completing = false;
  SpinClock::time_point ended{};
};
thread_local KeeperThread t_keeper;

}  // namespace

std::unique_ptr<CpuWorkers> make_cpu_workers(EngineCore& engine, int threads) {
  return std::make_unique<CpuExecutor>(engine, threads);
}

CpuExecutor::CpuExecutor(EngineCore& engine, int threads) : CpuExecutor(engine, threads, usable_cores()) {}

CpuExecutor::CpuExecutor(EngineCore& engine, int threads, int cores)
    : CpuWorkers(threads, threads < cores),
      engine_(engine),
      cores_(cores),
      // oneTBB caps its pool at the cores the process may use; an engine
      // asked for more threads (tests oversubscribe on purpose) raises the cap.
      parallelism_(threads + 1 > cores_
                       ? std::make_unique<oneapi::tbb::global_control>(
                             oneapi::tbb::global_control::max_allowed_parallelism, threads + 1)
                       : nullptr),
      arena_(threads, /*reserved_for_masters=*/0),
      queue_(static_cast<std::size_t>(threads)),
      placement_(threads),
      mailboxes_(threads),
      kept_(threads) {
  positive_queued_ = &queue_.positive_count();
}

CpuExecutor::~CpuExecutor() { shutdown(); }

void CpuExecutor::submit(ReadyOp op) {
  OpBlock* block = op.block();
  if (block->property == OpProperty::CpuPrioritized) block->priority = std::max(block->priority, 1);
  const std::size_t backlog = queue_.push(block);
  start_worker_if_needed(backlog);
}

std::size_t CpuExecutor::deliver_to_spinners(OpBlock* const* ops, std::size_t count) {
  // Each op delivered is its receiver's to run, so it needs no other wake-up.
  return spinning_.load(std::memory_order_seq_cst) != 0 ? mailboxes_.deliver(ops, count) : 0;
}

void CpuExecutor::submit_plain(OpBlock* const* ops, std::size_t count) {
  OpBlock* others[kMaxKeepGroup];
  std::size_t kept = 0;
  if (t_keeper.completing && t_keeper.executor == this && count <= kMaxKeepGroup) [[unlikely]] {
    kept = keep_successors(ops, count, others);
    if (kept != 0) {
      ops = others;
      count -= kept;
    }
  }
  // A kept op starts no worker: its keeper runs it soon, and a worker
  // woken for it would take it far from its data. Should the keeper's next
  // op take long after all, a spinning worker takes it (KeptOps), and the
  // engine's timer starts one where none spins (watch_queue).
  if (kept != 0) keep_watch();
  const std::size_t delivered = deliver_to_spinners(ops, count);
  if (delivered == count) return;
  // The receivers still count as spinning but take nothing from the queue:
  // what is queued needs workers besides them (one of them may be this
  // thread, registering pushes while it spins).
  start_worker_if_needed(queue_.push_plain(ops + delivered, count - delivered) + delivered);
}

std::size_t CpuExecutor::keep_successors(OpBlock* const* ops, std::size_t count, OpBlock** others) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (ops[i]->bytes != 0 && kept_.keep(t_keeper.box, ops[i], t_keeper.ended)) {
      ++kept;
    } else {
      others[i - kept] = ops[i];
    }
  }
  return kept;
}

OpBlock* CpuExecutor::take_back_kept() {
  OpBlock* op = kept_.take_back(t_keeper.box);
  // An op of positive priority that became ready meanwhile runs first
  // (docs/semantics.md, Priority), and the kept ones are queued behind it:
  // left in the slots, they would wait for this worker's next chain.
  if (op != nullptr && positive_priority_queued()) [[unlikely]] {
    OpBlock* ops[KeptOps::kSlots];
    std::size_t count = 0;
    for (; op != nullptr; op = kept_.take_back(t_keeper.box)) ops[count++] = op;
    start_worker_if_needed(queue_.push_plain(ops, count));
    return nullptr;
  }
  return op;
}

void CpuExecutor::submit_unattended(OpBlock* const* ops, std::size_t count) {
  // Apart from the workers' queue: a worker active now would take them and
  // stay active, one thread more on the cores than the neighbours leave.
  held_.push_plain(ops, count);
  // The time first, for a reader of the flag.
  if (!unattended_.load(std::memory_order_relaxed)) {
    unattended_since_.store(SpinClock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }
  unattended_.store(true, std::memory_order_seq_cst);
}

bool CpuExecutor::clear_unattended() {
  // The exchange read the flag stored after the ops' push: they are visible.
  return unattended_.load(std::memory_order_seq_cst) && unattended_.exchange(false, std::memory_order_seq_cst) &&
         held_.queued_now();
}

void CpuExecutor::attend() {
  if (unattended_.load(std::memory_order_seq_cst)) hand_held_to_workers(/*clear=*/true);
}

void CpuExecutor::hand_held_to_workers(bool clear) {
  bool moved = false;
  {
    const std::lock_guard lock(held_moves_);
    if (clear && !clear_unattended()) return;
    OpBlock* batch[kMaxBatch];
    bool more = false;
    while (std::size_t count = held_.pop(batch, kMaxBatch, more)) {
      queue_.push_plain(batch, count);
      moved = true;
    }
  }
  // One worker, whatever the backlog: beside busy neighbours one more
  // thread is what the cores have room for.
  if (moved) start_worker_if_needed(1);
}

int CpuExecutor::active_limit(int threads, int cores, int neighbour_cores) {
  if (neighbour_cores <= 0) return threads;
  return std::clamp(cores - neighbour_cores, 1, threads);
}

int CpuExecutor::active_limit() const {
  const MachineLoad& load = MachineLoad::process();
  const int neighbours = load.neighbours_busy() ? load.neighbour_cores() : 0;
  return std::min(threads_, active_limit(threads_, cores_, neighbours) + escapes_.load(std::memory_order_relaxed));
}

void CpuExecutor::keep_watch() {
  // Read first: while the workers keep pace every submit comes here. Seq_cst,
  // for the last retiring worker's end_watch (worker_loop).
  if (!watched_.load(std::memory_order_seq_cst) && !watched_.exchange(true, std::memory_order_seq_cst)) {
    engine_.on_cpu_watch();
  }
}

bool CpuExecutor::watch_queue(std::uint64_t completed) {
  // A submit that left its op to the workers while the last one retired may
  // set the watch after that worker ended it: with no worker active and
  // nothing queued there is nothing to watch.
  if (watched_.load(std::memory_order_seq_cst) && active_.load(std::memory_order_seq_cst) == 0 &&
      !queue_.queued_now()) {
    end_watch();
  }
  if (!watched_.load(std::memory_order_seq_cst)) {
    window_open_ = false;
    return false;
  }
  const auto now = SpinClock::now();
  if (!window_open_) {
    window_open_ = true;
    window_at_ = now;
    window_completed_ = completed;
    return true;
  }
  const auto window = now - window_at_;
  if (window < kQueueWatchWindow) return true;
  // Ops of kLongOp or more per active worker, or none completed: a hand-off
  // costs a fraction of such an op, and the workers may wait for each other.
  const int active = active_.load(std::memory_order_seq_cst);
  const bool slow = static_cast<double>(completed - window_completed_) * kLongOp.count() <
                    std::chrono::duration<double, std::micro>(window).count() * std::max(1, active);
  window_at_ = now;
  window_completed_ = completed;
  if (slow && (queue_.queued_now() || kept_.any())) {
    if (active >= active_limit() && escapes_.load(std::memory_order_relaxed) < threads_) {
      escapes_.fetch_add(1, std::memory_order_relaxed);
    }
    start_worker_if_needed(1);
  }
  return true;
}

void CpuExecutor::end_watch() {
  if (watched_.load(std::memory_order_relaxed)) {
    escapes_.store(0, std::memory_order_relaxed);
    watched_.store(false, std::memory_order_seq_cst);
  }
}

void CpuExecutor::start_worker_if_needed(std::size_t backlog) {
  // No fence needed before reading active_: the queue's push ends with the
  // light half of an AsymmetricFence, which orders the op's publication
  // before this load (a retiring worker does the mirror image: active_ first,
  // then the heavy half, then the queue).
  int active = active_.load(std::memory_order_seq_cst);
  // One active worker guarantees progress (a retiring worker looks at the
  // queue once more). More are started only when the queued ops outnumber
  // the workers idly looking for work: workers busy running ops take none,
  // and on a small machine surplus spinners would steal the frontend's core.
  // Where the ops are left to the active workers (or the cap beside busy
  // neighbours says no), those may take other work instead, or run an op
  // that waits for these: the engine's timer watches (watch_queue).
  while (active < threads_) {
    if ((active != 0 && backlog <= static_cast<std::size_t>(spinning_.load(std::memory_order_seq_cst))) ||
        active >= active_limit()) {
      keep_watch();
      return;
    }
    if (active_.compare_exchange_weak(active, active + 1, std::memory_order_seq_cst)) {
      starts_.started(SpinClock::now());
      if (parked_.unpark()) return;  // its task runs on, counted already
      // One count for the task, one for this call: the task may finish (and
      // the engine shut down) before enqueue has returned here.
      running_tasks_.fetch_add(2, std::memory_order_relaxed);
      arena_.enqueue([this] { worker_loop(); });
      // A worker another engine parked holds a thread of oneTBB's pool,
      // which this task may need.
      parked_.free_one_elsewhere();
      running_tasks_.fetch_sub(1, std::memory_order_release);
      return;
    }
  }
}

void CpuExecutor::worker_loop() {
  EngineThreadClock::enlist();
  const int clock = clocks_.enter();
  use_short_slice(false);
  int placed = arrive();
  bool beside_busy = false;  // when it last retired
  const int box = mailboxes_.claim();
  const WorkerScope scope(this);  // its end touches only this thread's state
  // With one worker no other could take a kept op from it.
  const KeeperThread outer = std::exchange(t_keeper, {.executor = this, .box = threads_ > 1 ? box : -1});
  // Ops taken from the queue in one go: one consumer hand-off for several
  // small ops.
  OpBlock* batch[kMaxBatch];
  for (;;) {
    bool more = false;
    std::size_t count = pop_for_worker(batch, kMaxBatch, more);
    if (count == 0) {
      // Open before counted as spinning: a submit that sees the count finds the box.
      if (box >= 0) mailboxes_.open(box, SpinClock::now());
      spinning_.fetch_add(1, std::memory_order_seq_cst);
      // Ready to receive first, then the engine's bookkeeping.
      engine_.on_cpu_idle();
      // Now and then it lets another thread have this core: on a busy
      // machine the frontend we wait for may be queued behind us on it.
      // One slot of the batch stays free for what the box may bring.
      SpinWait spin(kIdleSpin, kRoundsPerYield);
      while (count == 0 && spin.round([&] { return box >= 0 && mailboxes_.has_delivery(box); })) {
        if (box >= 0) {
          mailboxes_.awake(box, spin.round_end());
          if (OpBlock* delivered = mailboxes_.take(box)) {
            batch[count++] = delivered;
            break;
          }
        }
        count = pop_for_worker(batch, kMaxBatch - 1, more);
        if (count == 0 && ((batch[0] = kept_.steal(box, spin.round_end() - kKeptOpWait)) != nullptr ||
                           (batch[0] = mailboxes_.reclaim(box, spin.round_end() - kStaleSpinner)) != nullptr)) {
          count = 1;
          break;
        }
        // What it registered may have come to its own box: the next round
        // takes that one first, and leaves what was queued to other workers.
        if (count == 0 && engine_.on_cpu_spinning()) continue;
      }
      spinning_.fetch_sub(1, std::memory_order_seq_cst);
      if (box >= 0) {
        if (OpBlock* delivered = mailboxes_.close(box)) count = keep_delivered(delivered, batch, count);
      }
      // Its look for work over, it takes a kept op however briefly kept:
      // the keeper may be in a long op, and this worker is about to retire.
      if (count == 0 && (batch[0] = kept_.steal(box, SpinClock::time_point::max())) != nullptr) count = 1;
      // Off to run ops, where a retiring worker counted on this one to look
      // at the queue once more: the exact look is ours now.
      if (count != 0 && look_left_.load(std::memory_order_seq_cst) &&
          look_left_.exchange(false, std::memory_order_seq_cst) && queue_.queued_after_retiring()) {
        start_worker_if_needed(1);
      }
    }
    if (count == 0) {
      const bool last = active_.fetch_sub(1, std::memory_order_seq_cst) == 1;
      // A submit that saw us active did not start a worker, and a push that
      // saw us active held its op back: look once more. The exact look's
      // heavy fence (a membarrier) costs tens of µs in a VM and interrupts
      // every core of the process, so a worker that leaves another spinning
      // leaves it to that one, which keeps looking at the queue, or makes
      // the look itself when it stops spinning to run ops (look_left_). One
      // running an op is no such help: the op may take long, or even wait
      // for the one a racing push left queued.
      const bool released = engine_.on_cpu_retiring();
      bool exact = last;
      if (!exact) {
        look_left_.store(true, std::memory_order_seq_cst);
        exact = spinning_.load(std::memory_order_seq_cst) == 0;
      }
      const bool queued = exact ? queue_.queued_after_retiring() : queue_.queued_now();
      if (!queued && !released) {
        // Nothing queued is left to the workers: the exact look sees an op
        // whose submit found this worker active.
        if (last) end_watch();
        beside_busy = beside_busy_threads();
        if (beside_busy && park(placed)) continue;
        break;
      }
      int active = active_.load(std::memory_order_seq_cst);
      bool rejoined = false;
      while (active < threads_ && active < active_limit() && !rejoined) {
        rejoined = active_.compare_exchange_weak(active, active + 1, std::memory_order_seq_cst);
      }
      if (!rejoined) {
        // The active ones run what is queued, unless they are stuck.
        if (active < threads_) keep_watch();
        break;
      }
      continue;
    }
    // A submit may have counted on us as a spinner while we took other work:
    // pass the wake-up on if ops are still waiting.
    if (more) start_worker_if_needed(1);
    run_batch(batch, count, placed);
  }
  if (box >= 0) mailboxes_.release(box);
  placement_.leave(placed);
  // Back to oneTBB's idle loop, whose yields would starve this thread beside
  // busy threads (sync/short_slice.h). Only then: with a short slice the
  // idle thread would take turns from our frontend, which a parked worker
  // does not.
  use_short_slice(beside_busy);
  t_keeper = outer;
  clocks_.leave(clock);
  running_tasks_.fetch_sub(1, std::memory_order_release);  // last touch of *this
}

std::size_t CpuExecutor::pop_for_worker(OpBlock** out, std::size_t max, bool& more) {
  const std::size_t count = queue_.pop(out, max, more, ReadyQueue::Take::non_negative);
  if (count != 0 || !queue_.holds_negative()) return count;
  // Whatever is held, marked or not (a helper clears the mark before it
  // runs the last ones); after a move another thread has under way.
  hand_held_to_workers();
  return queue_.pop(out, max, more);
}

bool CpuExecutor::park(int& placed) {
  placement_.leave(placed);
  placed = -1;
  if (!parked_.park(kPark)) return false;
  placed = arrive();
  return true;
}

int CpuExecutor::arrive() {
  const int placed = placement_.arrive(starts_.arrived(SpinClock::now()));
  if (starts_.pending()) make_way_for_started_worker(/*arriving=*/true);
  return placed;
}

std::size_t CpuExecutor::keep_delivered(OpBlock* delivered, OpBlock** batch, std::size_t count) {
  // Delivered while this worker took ops from the queue: the deliverer
  // counted on it for that op alone, and on other workers for what it
  // queued. Keeping both would run ops that were to overlap one after the
  // other; the queued ones go back.
  if (count != 0) {
    std::size_t backlog = 0;
    for (std::size_t i = 0; i < count; ++i) backlog = queue_.push(batch[i]);
    start_worker_if_needed(backlog);
  }
  batch[0] = delivered;
  return 1;
}

bool CpuExecutor::help() {
  // Counted as a worker while it helps: its completions need not wake the
  // waiters one by one (the caller is one of them, and wakes the rest).
  const WorkerScope scope(this);
  OpBlock* batch[kMaxBatch];
  bool ran = false;
  bool more = false;
  // What this thread's pushes held, one at a time: the others stay where
  // attend() finds them, should this one wait for one of them (two ops
  // that wait for each other must not both be this thread's). Ops of
  // positive priority before them, the rest of what the workers left after.
  const auto pop = [&] {
    if (std::size_t first = queue_.pop(batch, kMaxBatch, more, ReadyQueue::Take::positive)) return first;
    const std::size_t held = held_.pop(batch, 1, more);
    return held != 0 ? held : queue_.pop(batch, kMaxBatch, more);
  };
  for (;;) {
    while (std::size_t count = pop()) {
      const auto start = SpinClock::now();
      const std::size_t ops = run_batch(batch, count, /*slot=*/-1);
      ran = true;
      if (!unattended_.load(std::memory_order_relaxed)) continue;
      // The ops queued unattended have a thread again.
      const auto end = SpinClock::now();
      unattended_since_.store(end.time_since_epoch().count(), std::memory_order_relaxed);
      // Ops that take this long each are better run by a worker too than
      // by this thread alone: a wake-up costs far less.
      if (end - start >= ops * kLongOp && held_.queued_now()) hand_held_to_workers();
    }
    // What was queued unattended has run, unless more came meanwhile.
    if (!clear_unattended()) return ran;
  }
}

std::size_t CpuExecutor::run_batch(OpBlock** batch, std::size_t count, int slot) {
  // The ops were written on another core: let their misses overlap, in
  // stages, each reading addresses the previous stage brought in.
  for (std::size_t i = 0; i < count; ++i) prefetch_block(batch[i]);
  for (std::size_t i = 0; i < count; ++i) prefetch_entries(batch[i]);
  for (std::size_t i = 0; i < count; ++i) prefetch_vars(batch[i]);
  std::size_t ran = 0;
  for (std::size_t i = 0; i < count; ++i) {
    // An op of positive priority that became ready meanwhile runs before
    // the rest (docs/semantics.md, Priority): they go back to the queue.
    if (i != 0 && positive_priority_queued()) [[unlikely]] {
      start_worker_if_needed(queue_.push_plain(batch + i, count - i));
      break;
    }
    ran += run_chain(batch[i], slot);
  }
  return ran;
}

std::size_t CpuExecutor::run_chain(OpBlock* op, int slot) {
  // A worker task of this executor, on this thread (not a helper, nor a
  // worker of another engine that helps this one in its op).
  const bool keeps = t_keeper.executor == this && t_keeper.box >= 0;
  std::size_t ran = 0;
  for (; op != nullptr; ++ran) {
    if (starts_.pending()) [[unlikely]] make_way_for_started_worker(/*arriving=*/false);
    if (--t_ops_to_placement_check == 0) [[unlikely]] {
      t_ops_to_placement_check = kOpsPerPlacementCheck;
      placement_.recheck(slot);
    }
    // What its completion will touch arrives while it runs.
    prefetch_successors(op);
    RunContext ctx{.device = Device::cpu(), .property = op->property, .name = op->name_view()};
    // The engine's own calls, not ReadyOp's: this is every CPU op's path.
    const bool async = op->kind == OpKind::Async;
    // Only an op on data that ran briefly may keep its successors: after a
    // long one, they go to idle workers.
    const bool timed = keeps && op->bytes != 0;
    const SpinClock::time_point began = timed ? SpinClock::now() : SpinClock::time_point{};
    std::exception_ptr error = engine_.invoke(op, ctx);
    if (async) {
      op = nullptr;
    } else {
      if (timed) t_keeper.ended = SpinClock::now();
      t_keeper.completing = timed && t_keeper.ended - began < kKeptOpWait;
      op = engine_.complete_and_continue(op, std::move(error));
      t_keeper.completing = false;
    }
    if (op == nullptr && keeps) op = take_back_kept();
  }
  return ran;
}

void CpuExecutor::make_way_for_started_worker(bool arriving) {
  // Beside busy threads a start is late for want of a core, and a yield
  // would put this worker behind them for long (sync/short_slice.h).
  if (beside_busy_threads()) return;
  const auto now = SpinClock::now();
  if (arriving ? starts_.make_way_on_arrival(now) : starts_.make_way(now)) std::this_thread::yield();
}

void CpuExecutor::shutdown() {
  parked_.close();
  while (running_tasks_.load(std::memory_order_acquire) != 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace depengine::detail
