// ThreadedEngine: the asynchronous engine. A push of a CPU operation goes to
// the pushing thread's PushBuffer, whose batches are registered in the
// variables' version queues (holding every touched variable's lock, in
// address order, so registrations from several threads serialise
// consistently); other pushes register at once. Ready operations go to
// their device's executor.
//
// Beside busy neighbours, the ops a frontend's pushes make ready wait for
// its next blocking call (t_holds_ready; engine/held_ops.h), or for a
// burst of them to be in flight (hand_over_held_burst).
//
// When batches are registered (the policy): a full batch is sealed and left
// for a worker that runs out of work (registered by its frontend
// instead while the process loses cores, when the workers leave a core over
// or other processes keep cores busy; when every slot is taken, the frontend
// registers the oldest one to make room, or waits for a worker to free one:
// one registering them, or, with a core of its own and batches whose ops
// mostly wait for running ones, any worker); everything a buffer holds, at once
// while no CPU worker is active (nothing would run it sooner by waiting),
// when its thread blocks (wait_*, back-pressure) or, on a worker, completes
// an operation, when another thread pushes onto a variable it holds, when a
// worker retires, and at the latest after the FlushTimer's bound.

#include <algorithm>
#include <atomic>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "engine/cpu_workers.h"
#include "engine/dependency_tracker.h"
#include "engine/engine_core.h"
#include "engine/flush_timer.h"
#include "engine/held_ops.h"
#include "engine/in_flight_counter.h"
#include "engine/op_pool.h"
#include "engine/push_buffers.h"
#include "engine/var_adoption.h"
#include "sync/engine_thread_clock.h"
#include "sync/machine_load.h"
#include "sync/progress_watch.h"
#include "sync/spin_wait.h"
#include "sync/tuning.h"
#include "sync/usable_cores.h"
#include "sync/wait_signal.h"

namespace depengine {

using detail::Entry;
using detail::OpBlock;
using detail::OpKind;
using detail::PushBuffer;
using detail::ReadyList;

namespace {

// 0: one worker per core this process may run on (taskset, a cgroup's
// cpuset, mpirun's binding), not per core of the machine.
int resolve_threads(int requested) { return requested > 0 ? requested : detail::usable_cores(); }

// Countdowns to the next back-pressure check of this thread (a division per
// push would cost more than the check saves).
thread_local std::int64_t t_pushes_to_check = 0;
thread_local std::int64_t t_completions_to_check = 0;
// Back-pressure checks to this thread's next look at its CPU (WorkerPlacement).
thread_local std::int64_t t_checks_to_step_off = 0;

bool count_down(std::int64_t& countdown, std::size_t interval) {
  if (--countdown > 0) return false;
  countdown = static_cast<std::int64_t>(interval);
  return true;
}

// Set while this thread pushes, or runs queued ops in wait_all, beside busy
// neighbours (MachineLoad): the CPU ops it makes ready are queued without
// waking a worker (CpuWorkers::submit_unattended), for this thread to run
// when it blocks in wait_all. A woken worker would take turns for a core
// with the neighbours and this thread, at a hand-off per op; run here, they
// need none. Its other blocking calls and back-pressure start a worker for
// them instead, and so do a burst of them (hand_over_held_burst) and the
// flush timer when HeldOps says so.
thread_local bool t_holds_ready = false;

class HoldReady {
 public:
  explicit HoldReady(bool hold) : set_(hold && !t_holds_ready) {
    if (set_) t_holds_ready = true;
  }
  ~HoldReady() {
    if (set_) t_holds_ready = false;
  }
  HoldReady(const HoldReady&) = delete;
  HoldReady& operator=(const HoldReady&) = delete;

 private:
  const bool set_;
};

// How a frontend that found every batch slot taken waits while a worker
// registers them, for that worker to free the first (a registration frees a
// slot within a few microseconds), before it waits on the registration lock
// for all of them, sleeping after a short spin. With a core of its own it
// spins; otherwise it yields its core, which a worker may need.
constexpr PushBuffer::RoomWait kRoomWaitSpinning{.spin = detail::tuning::kRoomWaitSpin, .yield = false};
constexpr PushBuffer::RoomWait kRoomWaitYielding{.spin = detail::tuning::kRoomWaitYield, .yield = true};

// How it waits when its ops mostly wait for running ones: the same spin, but
// it then leaves registering to the workers even while none is registering,
// since registering behind running ops pulls their variables' lines away from
// the workers that complete them. Only with a core of its own: without one,
// yielding to the workers costs the workloads whose ops do not wait more
// than it gains.
constexpr PushBuffer::RoomWait kRoomWaitForWorkers{
    .spin = kRoomWaitSpinning.spin, .yield = false, .for_workers = true};

// A frontend that registers the oldest batch itself, at once.
constexpr PushBuffer::RoomWait kRoomWaitNone{};

}  // namespace

class ThreadedEngine final : public EngineCore {
 public:
  explicit ThreadedEngine(const EngineOptions& options)
      : EngineCore(options),
        check_interval_(
            std::clamp<std::size_t>(options.max_ops_in_flight / 8, 1, detail::tuning::kBackPressureCheckInterval)),
        buffers_(vars_.engine_id()),
        flush_timer_(detail::tuning::kFlushPeriod, detail::tuning::kMaxFlushPeriod, [this] { return flush_stale(); }) {
    auto cpu = detail::make_cpu_workers(*this, resolve_threads(options.cpu_threads));
    cpu_ = cpu.get();
    add_device(Device::cpu(), std::move(cpu));
  }

  ~ThreadedEngine() override {
    run_queued_before_waiting();
    wait_until_in_flight_at_most(0, waiters_, detail::tuning::kWaitSignalSpin);
    // A device or completion thread may still be inside on_completed, just
    // past counting the last completion: let it leave before we go.
    while (external_calls_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    shutdown_devices();
  }

  int cpu_threads() const override { return cpu_->threads(); }

  void wait_all() override {
    check_blocking_allowed("wait_all");
    detail::OpObserver* obs = observer();
    if (obs) [[unlikely]] obs->on_block_begin("wait_all");
    run_queued_before_waiting();
    wait_until_in_flight_at_most(0, waiters_, detail::tuning::kWaitSignalSpin, waits_spinning_on_progress());
    if (obs) [[unlikely]] obs->on_block_end("wait_all");
    if (std::exception_ptr error = take_all_errors()) std::rethrow_exception(error);
  }

  void on_launched(OpBlock* op) override {
    ExternalCall call(external_calls_);
    ReadyList ready;
    for (Entry& e : op->entries) {
      std::lock_guard lock(e.var->lock);
      detail::dependency::mark_launched(*e.var, e, ready);
    }
    ready.settle();
    if (detail::OpObserver* obs = observer()) [[unlikely]] report_released(*obs, *op, ready, 0);
    dispatch(ready, nullptr);
  }

  void on_completed(OpBlock* op, std::exception_ptr error) override {
    ExternalCall call(external_calls_);
    ReadyList ready;
    finish(op, std::move(error), ready);
    dispatch(ready, nullptr);
  }

  OpBlock* complete_and_continue(OpBlock* op, std::exception_ptr error) override {
    // What the op pushed waits for nothing more on this thread.
    if (PushBuffer* own = buffers_.mine_if_cached(); own && own->maybe_holds_ops()) flush(*own);
    ReadyList ready;
    finish(op, std::move(error), ready);
    OpBlock* next = nullptr;
    dispatch(ready, &next);
    return next;
  }

  void on_cpu_idle() override { wake_waiters(); }

  void on_cpu_watch() override { flush_timer_.arm(); }

  bool on_cpu_retiring() override { return registered_while_idle(flush_all()); }

  // A worker with nothing to run takes the registration of sealed batches
  // off their frontends.
  bool on_cpu_spinning() override {
    if (!buffers_.any_sealed()) return false;
    std::size_t registered = 0;
    buffers_.for_each([&](PushBuffer& buffer) {
      if (buffer.has_sealed()) registered += register_from(buffer, &PushBuffer::register_sealed);
    });
    return registered_while_idle(registered);
  }

 protected:
  void submit(OpBlock* op) override {
    if (count_down(t_pushes_to_check, check_interval_)) {
      detail::EngineThreadClock::enlist();  // a frontend's CPU time is the engine's (MachineLoad)
      if (!in_operation()) {
        apply_back_pressure();
        if (!cpu_->on_worker_thread()) {
          if (detail::MachineLoad::process().last_verdict()) hand_over_held_burst();
          // The scheduler may have put this thread on an active worker's CPU
          // while another CPU is free of them (WorkerPlacement). Not at every
          // check: beside a worker on every CPU each look finds none free, at
          // the cost of a system call.
          if (count_down(t_checks_to_step_off, detail::tuning::kBackPressureChecksPerStepOff)) {
            cpu_->step_off_workers(/*rate_limited=*/true);
          }
        }
      }
    }
    if (detail::OpObserver* obs = observer()) [[unlikely]] obs->on_push(*op);
    // The verdict however old: its age costs a clock read per push, and the
    // flush timer, which a held op arms, judges again within a tick.
    const bool hold =
        detail::MachineLoad::process().last_verdict() && !in_operation() && !cpu_->on_worker_thread();
    const HoldReady scope(hold);
    PushBuffer* buffer = buffer_for(*op);
    if (buffer == nullptr || !batch(op, *buffer, hold)) register_now(op, buffer);
  }

  void before_blocking() override { cpu_->attend(); }

  // Beside busy neighbours a frontend's ops wait for its next blocking
  // call; held that long, thousands of them, each op's lines (its block,
  // its entries, the next entries in its variables' queues) have left the
  // caches by the time it runs, and the misses cost several times the op.
  // So past kHeldBurst ops in flight the frontend hands them to one worker
  // and yields its core, which that worker most likely shares with it,
  // until they ran (a quarter left) or the workers stand still for
  // kHeldBurstStall, then pushes on. Never longer: an op may wait for what
  // this thread does after the push. Not at all where a neighbour, not the
  // worker, shares its CPU (HeldOps::waits_for_burst). A stall while the
  // workers had their cores (their CPU time grew: a long op) is not waited
  // for again until they complete an op, or the frontend would push a few
  // dozen ops per kHeldBurstStall for as long as the op runs; one while
  // they lacked their cores is, since they run the burst once back.
  //
  // A loop of yields, not a SpinWait: it gives the core away on purpose,
  // so a yield that returns after a neighbour's time slice is no lost core,
  // and the process's Contention, which busy neighbours keep active (no
  // spinning for up to 0.64 s after lost cores), must not end it before it
  // began: then no held op ran before the frontend stopped pushing.
  void hand_over_held_burst() {
    constexpr std::int64_t kBurst = detail::tuning::kHeldBurst;
    if (in_flight() <= kBurst) return;
    if (PushBuffer* own = buffers_.mine_if_cached()) flush(*own);
    cpu_->attend();
    if (!detail::HeldOps::waits_for_burst(cpu_->neighbours_on_every_core(), cpu_->worker_on_this_cpu())) return;
    const std::uint64_t completed_before = counter_.completed();
    if (completed_before == burst_stalled_at_.load(std::memory_order_relaxed)) return;
    const std::optional<double> workers_before = cpu_->workers_cpu_seconds();
    const auto start = detail::SpinClock::now();
    detail::ProgressWatch workers(completed_before, start, detail::tuning::kHeldBurstStall);
    const auto completed = [this] { return counter_.completed(); };
    // The watch first: a yield that returns after a neighbour's time slice
    // outlasts kHeldOpsMaxWait, and the stall must still be judged.
    for (auto now = start; workers.moving(completed, now) && now - start < detail::tuning::kHeldOpsMaxWait;
         now = detail::SpinClock::now()) {
      if (in_flight() <= kBurst / 4) return;
      std::this_thread::yield();
    }
    if (!workers.stalled() || !workers_before) return;
    const std::optional<double> workers_after = cpu_->workers_cpu_seconds();
    const double waited_s = std::chrono::duration<double>(detail::SpinClock::now() - start).count();
    if (workers_after &&
        detail::HeldOps::stalled_in_long_op(*workers_after - *workers_before, waited_s,
                                            [this] { return cpu_->workers_asleep(); })) {
      burst_stalled_at_.store(workers.count(), std::memory_order_relaxed);
    }
  }

  // A core of its own: fewer workers than cores, and neither neighbours nor
  // lost cores take it (sync/spin_wait.h ends the spin on a lost core too).
  bool waits_spinning_on_progress() const override {
    return cpu_->has_spare_core() && !cpu_->beside_busy_threads();
  }
  std::uint64_t completed_ops() const override { return counter_.completed(); }

 private:
  // This thread's buffer when `op` may wait in a batch (a CPU op with
  // variables, batching on), else null.
  PushBuffer* buffer_for(const OpBlock& op) {
    // A graph replay is a batch already: one op holding all its variables.
    const bool batched = options_.batch_pushes && (op.kind == OpKind::Sync || op.kind == OpKind::Async) &&
                         op.device.is_cpu() && !op.entries.empty() && !op.runs_graph;
    return batched ? buffers_.mine() : nullptr;
  }

  // The frontend's policy: adds `op` to `buffer`'s current batch, then
  // registers or seals the batch as the workers' state says. False, with
  // nothing done, when `op` must be registered at once instead. `hold`:
  // what the push makes ready waits for this thread to block (t_holds_ready).
  bool batch(OpBlock* op, PushBuffer& buffer, bool hold) {
    // With no worker active and nothing held back, batching would only delay
    // the op: the engine is idle, or this thread pushes now and then. Not
    // when what the push makes ready waits for this thread anyway.
    if (!hold && cpu_->idle() && !buffer.maybe_holds_ops()) return false;
    buffer.lock();
    if (!buffer.claim(*op)) {  // another thread's batch holds one of its variables
      buffer.unlock();
      return false;
    }
    // Holding the claims: a delete_var that did not see them is seen here.
    if (const Entry* stale = stale_entry(*op)) [[unlikely]] {
      buffer.unlock();
      reject_stale(op, *stale);
    }
    const bool was_empty = buffer.empty();
    buffer.add(op);
    const bool full = buffer.full();
    // A full batch is sealed, to wait for a worker that runs out of work:
    // registering is a good part of a push's cost, better paid by a worker
    // than by the frontend that feeds them. A push never runs ops (it does
    // not wait for computation: an op may wait for what this thread does
    // after the push). Idle read again: a worker that retired meanwhile
    // would leave a sealed batch to the flush timer.
    const bool idle = !hold && cpu_->idle();
    const bool register_here = full && !idle && registers_own_batches();
    const bool sealed = full && !idle && !register_here && buffer.seal();
    buffer.unlock();
    if (idle || register_here) {
      // Idle: no worker would run it sooner. Else a worker that has to win
      // back its core would register the batch late, and while it does,
      // this thread would wait for room or contend for the batch's locks.
      flush(buffer);
    } else if (full && !sealed && takes_turns_with_worker() && !cpu_->step_off_workers(/*rate_limited=*/true)) {
      // The worker cannot register while this thread holds their one CPU:
      // register the oldest batch now, without waiting for room.
      register_with([&](ReadyList& ready) { return buffer.seal_making_room(ready, kRoomWaitNone); });
    } else if (full && !sealed) {
      // Every slot is taken: make room by registering the oldest batch, or
      // by waiting for a worker that does (this thread registers it itself
      // when the workers stand still: they are not running).
      register_with([&](ReadyList& ready) { return buffer.seal_making_room(ready, room_wait(buffer)); });
    } else if (!full && was_empty) {
      flush_timer_.arm();
    }
    return true;
  }

  // How a frontend that found every slot of `buffer` taken waits for room.
  // Sleeping on the registrant's lock would cost this thread, the one that
  // feeds the workers, a wake-up, and the registrant a syscall.
  PushBuffer::RoomWait room_wait(const PushBuffer& buffer) const {
    PushBuffer::RoomWait wait = !cpu_->has_spare_core() ? kRoomWaitYielding
                                : leave_to_workers(buffer) ? kRoomWaitForWorkers
                                                           : kRoomWaitSpinning;
    wait.workers = &counter_;
    return wait;
  }

  // Counts the push of `op` (a buffered one is counted by its PushBuffer)
  // and registers it in its variables' queues now, after the buffered ops
  // its variables may wait behind: the caller's own (`own`, program order)
  // and those of the buffers holding the variables' claims.
  void register_now(OpBlock* op, PushBuffer* own) {
    counter_.add_pushed();
    if (op->adoption) return register_replay(op, own);
    flush_earlier_pushes(own, op->entries, [](const Entry& e) { return e.var; });
    const int entries = static_cast<int>(op->entries.size());
    op->pending.store(entries + 1, std::memory_order_relaxed);
    ReadyList ready;
    int granted = 0;
    lock_entries_evicting(*op);
    if (const Entry* stale = stale_entry(*op)) [[unlikely]] {
      for (Entry& e : op->entries) e.var->lock.unlock();
      counter_.add_completed();  // balances the push counted above, which did not happen
      reject_stale(op, *stale);
    }
    for (Entry& e : op->entries) granted += detail::dependency::append(*e.var, e);
    for (Entry& e : op->entries) e.var->lock.unlock();
    settle_registered(op, granted, entries, ready);
  }

  // Registers what must come before an op on these variables: this
  // thread's own batch (`own`, program order) and the batches of the
  // buffers holding the variables' claims.
  template <typename Items, typename VarOf>
  void flush_earlier_pushes(PushBuffer* own, const Items& items, VarOf var_of) {
    if (own && own->maybe_holds_ops()) flush(*own);
    PushBuffer* flushed = nullptr;  // neighbouring variables claimed by one buffer flush it once
    for (const auto& item : items) {
      // Sequentially consistent, for a delete_var's registration: see stale_entry.
      PushBuffer* holder = var_of(item)->claim.load(std::memory_order_seq_cst);
      if (holder != nullptr && holder != own && holder != flushed) {
        flush(*holder);
        flushed = holder;
      }
    }
  }

  // Grants made at registration are settled in one step, or in none when
  // every entry was granted (then no other thread can count the op down).
  void settle_registered(OpBlock* op, int granted, int entries, ReadyList& ready) {
    if (granted == entries || op->pending.fetch_sub(granted + 1, std::memory_order_acq_rel) == granted + 1) {
      ready.push(op);
    }
    dispatch(ready, nullptr);
  }

  // Locks the op's variables (sorted by address: a global lock order) once
  // no graph holds any of them without an entry.
  static void lock_entries_evicting(OpBlock& op) {
    for (;;) {
      for (Entry& e : op.entries) e.var->lock.lock();
      const auto adopted = std::find_if(op.entries.begin(), op.entries.end(),
                                        [](const Entry& e) { return e.var->adopted; });
      if (adopted == op.entries.end()) [[likely]] return;
      for (Entry& e : op.entries) e.var->lock.unlock();
      detail::VarAdoption::evict(*adopted->var);
    }
  }

  // A replay of a graph that adopts variables (engine/var_adoption.h): its
  // entries are made here, under the adoption's mutex, for the variables
  // the graph does not hold already, and a variable whose queue is empty
  // is adopted instead of queued.
  void register_replay(OpBlock* op, PushBuffer* own) {
    detail::VarAdoption& adoption = *op->adoption;
    const std::vector<detail::ReplayEntry>& all = adoption.entries();
    // On adopted variables too.
    flush_earlier_pushes(own, all, [](const detail::ReplayEntry& r) { return r.state; });
    std::unique_lock adoption_lock(adoption.mutex());
    std::vector<Entry>& entries = op->entries;
    for (;;) {
      entries.clear();
      for (const detail::ReplayEntry& r : all) {
        if (!adoption.adopted(static_cast<std::size_t>(&r - all.data()))) {
          entries.emplace_back().place(r.state, op, r.write, r.position, r.generation);
        }
      }
      for (Entry& e : entries) e.var->lock.lock();
      // One another graph adopted leaves it first (its mutex is not ours to hold meanwhile).
      const auto foreign = std::find_if(entries.begin(), entries.end(),
                                        [](const Entry& e) { return e.var->adopted; });
      if (foreign == entries.end()) break;
      for (Entry& e : entries) e.var->lock.unlock();
      adoption_lock.unlock();
      detail::VarAdoption::evict(*foreign->var);
      adoption_lock.lock();
    }
    if (const Entry* stale = stale_entry(*op)) [[unlikely]] {
      for (Entry& e : entries) e.var->lock.unlock();
      adoption_lock.unlock();
      counter_.add_completed();  // balances the push counted above, which did not happen
      reject_stale(op, *stale);
    }
    // Adopted: dropped from the entries before any is linked. Its lock may
    // go at once: whoever registers on it now must evict it, which waits for
    // the adoption's mutex.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (adoption.try_adopt(entries[i].position)) {
        entries[i].var->lock.unlock();
        continue;
      }
      if (kept != i) entries[kept] = std::move(entries[i]);
      ++kept;
    }
    entries.resize(kept);
    const int count = static_cast<int>(kept);
    op->pending.store(count + 1, std::memory_order_relaxed);
    int granted = 0;
    for (Entry& e : entries) granted += detail::dependency::append(*e.var, e);
    for (Entry& e : entries) e.var->lock.unlock();
    adoption.registered(op);
    adoption_lock.unlock();
    ReadyList ready;
    settle_registered(op, granted, count, ready);
  }

  // Whether this frontend shares its CPU with an active worker, which the
  // kernel does when another thread holds the other cores (2 threads
  // against 1 is as balanced as 3 on 2 gets), or to pack threads that would
  // fit one CPU. Not for a push from inside an operation, on whatever
  // thread: that thread runs the workers' ops, and is not one to move.
  bool takes_turns_with_worker() const {
    return cpu_->has_spare_core() && !in_operation() && cpu_->worker_on_this_cpu();
  }

  // Whether a frontend registers its full batches itself: beside threads
  // other than the engine's that keep cores busy (MachineLoad), or while
  // the process's threads lose their cores (Contention) with a core left
  // over by the workers. Not otherwise with a worker on every core: there
  // the engine's own threads are one more than the cores, which loses
  // cores on a quiet machine too, and registering is better left to them.
  bool registers_own_batches() const { return cpu_->beside_busy_threads(); }

  // Whether threads other than the engine's keep cores busy (MachineLoad),
  // and the engine's own threads take turns with them.
  static bool neighbours_busy() { return detail::MachineLoad::process().neighbours_busy(); }

  // Whether a frontend that found every slot of `buffer` taken should wait
  // for a worker to register (kRoomWaitForWorkers). Not on a worker pushing
  // from inside an op: with one worker, the one it would wait for is itself.
  bool leave_to_workers(const PushBuffer& buffer) const {
    return buffer.ops_mostly_waited() && !cpu_->on_worker_thread();
  }

  // Runs one of `buffer`'s registrations (flush, register_sealed) and
  // dispatches what became ready; returns how many ops it registered.
  std::size_t register_from(PushBuffer& buffer, std::size_t (PushBuffer::*registration)(ReadyList&)) {
    return register_with([&](ReadyList& ready) { return (buffer.*registration)(ready); });
  }
  // The same for a registration that takes more than the list.
  template <class Registration>
  std::size_t register_with(Registration&& registration) {
    ReadyList ready;
    const std::size_t registered = registration(ready);
    dispatch(ready, nullptr);
    return registered;
  }

  // For the idle worker's hooks, which run after on_cpu_idle: a
  // registration skips the ops whose inputs failed and completes them here,
  // and a worker's completions leave waking the waiters to its next
  // on_cpu_idle (see finish), which may never come if none of what it
  // registered reaches the queue. Returns whether anything was registered.
  bool registered_while_idle(std::size_t registered) {
    if (registered == 0) return false;
    wake_waiters();
    return true;
  }

  // Registers everything `buffer` holds.
  std::size_t flush(PushBuffer& buffer) { return register_from(buffer, &PushBuffer::flush); }

  // For a thread about to wait for every op in flight: registers what the
  // buffers hold, and runs the queued CPU ops itself, as it would only sleep
  // otherwise (the last ones it completes may be what other waiters wait
  // for). With a worker on every core only beside busy neighbours, where
  // the workers do not have every core either.
  void run_queued_before_waiting() {
    const bool hold = neighbours_busy();
    {
      const HoldReady scope(hold);
      flush_all();
      if ((hold || cpu_->has_spare_core()) && cpu_->help()) wake_waiters();
    }
    // What other frontends held meanwhile.
    cpu_->attend();
  }

  std::size_t flush_all() {
    std::size_t flushed = 0;
    buffers_.for_each([&](PushBuffer& buffer) { flushed += flush(buffer); });
    return flushed;
  }

  // The FlushTimer's tick: flushes the buffers that held ops since the
  // previous tick while nothing of theirs was registered.
  detail::FlushTimer::Tick flush_stale() {
    // While the engine works, its neighbours are judged at least once per
    // window, from this thread (which otherwise sleeps).
    detail::MachineLoad::process().update(detail::SpinClock::now());
    detail::FlushTimer::Tick tick;
    buffers_.for_each([&](PushBuffer& buffer) {
      bool holds_ops = false;
      if (register_with([&](ReadyList& ready) { return buffer.flush_if_stale(ready, holds_ops); }) != 0) {
        tick.flushed = true;
      }
      tick.pending = tick.pending || holds_ops;
    });
    attend_if_stale(tick);
    if (cpu_->watch_queue(counter_.completed())) tick.pending = true;
    return tick;
  }

  // Ops queued unattended (t_holds_ready) get a worker when HeldOps says so.
  void attend_if_stale(detail::FlushTimer::Tick& tick) {
    detail::HeldOpsSample now{.when = detail::SpinClock::now(), .held = cpu_->unattended()};
    if (now.held) {
      now.held_since = cpu_->unattended_since();
      now.pushed = counter_.pushed() + pushed_to_buffers();
      now.completed = counter_.completed();
      now.in_flight = static_cast<std::int64_t>(now.pushed - now.completed);
      now.neighbours_busy = neighbours_busy();
      if (detail::HeldOps::need_worker(held_at_tick_, now)) {
        cpu_->attend();
        tick.flushed = true;
        now.held = false;
      }
    }
    held_at_tick_ = now;
    tick.pending = tick.pending || now.held;
  }

  // Runs or hands over every op in `ready` (and those they make ready).
  // With `inline_slot`, the first plain CPU op is left there for the caller.
  void dispatch(ReadyList& ready, OpBlock** inline_slot) {
    // Plain CPU ops go to the CPU executor together (a flushed batch makes
    // many ready at once): one hand-over to the workers for all of them.
    constexpr std::size_t kGroup = detail::tuning::kDispatchGroup;
    OpBlock* group[kGroup];
    std::size_t grouped = 0;
    while (!ready.empty()) {
      OpBlock* op = ready.pop();
      switch (op->kind) {
        case OpKind::Wait: {
          // Taken over from the variable when the wait was granted.
          std::exception_ptr error = std::move(op->entries.front().error);
          if (error) [[unlikely]] forget_failures_of(*op->entries.front().var);
          detail::WaitSignal* signal = op->signal;
          finish(op, nullptr, ready);
          signal->set(std::move(error));  // the waiter may return at once
          break;
        }
        case OpKind::Delete:
          finish_delete(op, ready);
          break;
        case OpKind::Sync:
        case OpKind::Async:
          if (op->device_uses_fences) collect_fences(*op);
          // An op granted early (it has fences) is skipped by its device once
          // its predecessors are done (ReadyOp::input_error): finishing it
          // here would complete it before them, and its failure would then
          // reach them backwards.
          // A graph replay sorts out failed inputs node by node (GraphRun).
          if (std::exception_ptr error = op->has_fences() || op->runs_graph ? nullptr : input_error(*op)) {
            // Skipped: a variable it touches failed earlier.
            if (op->kind == OpKind::Async) op->holds.store(1, std::memory_order_relaxed);
            finish(op, std::move(error), ready);
          } else if (inline_slot && *inline_slot == nullptr && op->kind == OpKind::Sync && plain_cpu(*op)) {
            *inline_slot = op;
          } else if (plain_cpu(*op)) {
            group[grouped++] = op;
            if (grouped == kGroup) {
              submit_plain(group, grouped);
              grouped = 0;
            }
          } else {
            op->executor->submit(ReadyOp(op));
          }
          break;
      }
    }
    // Ops of higher priority are ready (some perhaps from this completion):
    // they run first (docs/semantics.md, Priority).
    if (inline_slot && *inline_slot && cpu_->positive_priority_queued()) {
      group[grouped++] = std::exchange(*inline_slot, nullptr);
    }
    if (grouped != 0) submit_plain(group, grouped);
  }

  // A CPU op of priority 0: it may continue its predecessor on the same
  // thread, and joins the others in one hand-over to the workers.
  bool plain_cpu(const OpBlock& op) const {
    return op.executor == cpu_ && op.priority == 0 && op.property != OpProperty::CpuPrioritized;
  }

  void submit_plain(OpBlock* const* ops, std::size_t count) {
    if (t_holds_ready) {
      cpu_->submit_unattended(ops, count);
      flush_timer_.arm();  // after the ops' flag, for a tick that disarms (FlushTimer::arm)
    } else {
      cpu_->submit_plain(ops, count);
    }
  }

  static void collect_fences(OpBlock& op) {
    for (std::vector<Fence>& fences : op.entry_fences) {
      for (Fence& f : fences) op.fences.push_back(std::move(f));
      fences.clear();
    }
  }

  void finish_delete(OpBlock* op, ReadyList& ready) {
    detail::VarState* var = op->entries.front().var;
    std::exception_ptr release_error;
    if (op->release) {
      try {
        op->release();
      } catch (...) {
        release_error = std::current_exception();
      }
    }
    file_failure_of_deleted(*op, *var);
    if (release_error) record_unattached_failure(std::move(release_error));
    finish(op, nullptr, ready);
    recycle_var(var);
  }

  // The op is done (or skipped with `error`): release what it held.
  void finish(OpBlock* op, std::exception_ptr error, ReadyList& ready) {
    // An op launched before its predecessors completed learns of their
    // failure only now.
    // (A graph replay's nodes took theirs one by one: GraphRun.)
    if (!error && op->has_fences() && !op->runs_graph) error = input_error(*op);
    if (error) op->set_error(std::move(error));
    const bool failed = op->has_error && (op->kind == OpKind::Sync || op->kind == OpKind::Async);
    const std::size_t ready_before = ready.size();
    // The successors were written on the pushing thread's core and are
    // touched under the locks: let those misses overlap the locks' own.
    for (Entry& e : op->entries) {
      if (Entry* next = e.peek_next()) detail::prefetch_for_write(next);
    }
    for (Entry& e : op->entries) {
      std::lock_guard lock(e.var->lock);
      if (failed && e.write) detail::dependency::propagate_failure(*e.var, e, op->error);
      detail::dependency::remove_completed(*e.var, e, ready);
    }
    if (op->runs_graph && op->adoption) [[unlikely]] {
      // The stand-ins that held evicted variables for this replay.
      for (const std::unique_ptr<Entry>& stand_in : op->adoption->completed(op)) {
        std::lock_guard lock(stand_in->var->lock);
        detail::dependency::remove_completed(*stand_in->var, *stand_in, ready);
      }
    }
    ready.settle();
    if (failed) record_failure(*op);
    if (detail::OpObserver* obs = observer()) [[unlikely]] {
      report_released(*obs, *op, ready, ready_before);
      obs->on_complete(*op);
    }
    // The failure records hold the error now. Dropping the op's references
    // (its own, its entries' input errors) before the completion is counted
    // keeps a waiter that reads the error ordered after the drop: freeing
    // them when the block is reused would race with that read as far as
    // ThreadSanitizer sees (the exception's reference count is not
    // instrumented).
    if (op->has_error) [[unlikely]] {
      op->error = nullptr;
      for (Entry& e : op->entries) e.error = nullptr;
    }
    op_finished(*op);
    release_hold(op);
    counter_.add_completed();
    // A worker wakes the waiters when it runs out of work (on_cpu_idle,
    // registered_while_idle), not once per completion.
    if (!cpu_->on_worker_thread()) {
      wake_waiters();
    } else if (bp_waiters_.load(std::memory_order_relaxed) > 0 && count_down(t_completions_to_check, check_interval_)) {
      wake_waiters();
    }
  }

  // Tells the profiler which ops `by` made ready: those appended to `ready`
  // from index `from` on.
  static void report_released(detail::OpObserver& obs, const OpBlock& by, const ReadyList& ready,
                              std::size_t from) {
    for (std::size_t i = from; i < ready.size(); ++i) obs.on_release(by, *ready[i]);
  }

  void wake_waiters() {
    const int waiters = waiters_.load(std::memory_order_seq_cst);
    const int bp_waiters = bp_waiters_.load(std::memory_order_seq_cst);
    if (waiters + bp_waiters == 0) return;
    // Those in wait_all wait for nothing in flight: woken before, they would
    // only look and sleep again, and a graph of dependent steps runs its
    // workers out of work at every step. No wake-up is lost: the thread
    // whose completion empties the engine calls this after it.
    if (bp_waiters == 0 && in_flight() > 0) return;
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    epoch_.notify_all();
  }

  std::int64_t in_flight() const {
    return counter_.in_flight([this] { return pushed_to_buffers(); });
  }

  // The pushes the buffers counted (InFlightCounter counts the others).
  std::uint64_t pushed_to_buffers() const {
    std::uint64_t pushed = 0;
    buffers_.for_each([&](const PushBuffer& buffer) { pushed += buffer.pushed(); });
    return pushed;
  }

  void apply_back_pressure() {
    // From 2^63 on, a bound no count reaches: off.
    const auto bound = static_cast<std::int64_t>(
        std::min<std::size_t>(options_.max_ops_in_flight, std::numeric_limits<std::int64_t>::max()));
    if (in_flight() <= bound) return;
    if (PushBuffer* own = buffers_.mine_if_cached()) flush(*own);  // they may be what we wait for
    cpu_->attend();
    wait_until_in_flight_at_most(bound - bound / 4, bp_waiters_, detail::tuning::kBackPressureSpin);
  }

  // While the workers run what we wait for, the count drops within
  // microseconds: a bounded spin sees it without a sleep and the wake-up a
  // completing worker would pay for (a waiter is counted only once asleep).
  // With `on_progress` (waits_spinning_on_progress), it spins on while the
  // workers complete ops, as WaitSignal::wait_while_progressing does.
  void wait_until_in_flight_at_most(std::int64_t limit, std::atomic<int>& waiter_count,
                                    std::chrono::nanoseconds spin_budget, bool on_progress = false) {
    {
      detail::SpinWait spin(on_progress ? detail::tuning::kProgressSpin : spin_budget,
                            cpu_->has_spare_core() ? detail::SpinWait::kNeverYield : detail::SpinWait::kYieldEachRound);
      // Without `on_progress`, a window as long as the budget never ends the spin first.
      detail::ProgressWatch workers(counter_.completed(), detail::SpinClock::now(),
                                    on_progress ? detail::tuning::kProgressWindow : spin_budget);
      const auto completed = [this] { return counter_.completed(); };
      while (spin.round() && workers.moving(completed, spin.round_end())) {
        if (in_flight() <= limit) return;
      }
    }
    waiter_count.fetch_add(1, std::memory_order_seq_cst);
    bool slept = false;
    for (;;) {
      const std::uint32_t epoch = epoch_.load(std::memory_order_seq_cst);
      if (in_flight() <= limit) break;
      epoch_.wait(epoch, std::memory_order_seq_cst);
      slept = true;
    }
    waiter_count.fetch_sub(1, std::memory_order_relaxed);
    if (slept) after_blocking_sleep();
  }

  // Woken by a worker, a frontend is often placed on that worker's CPU
  // while another CPU idles (devices/cpu/worker_placement.h): it steps off.
  void after_blocking_sleep() override { cpu_->step_off_workers(/*rate_limited=*/false); }

  // Counts threads inside on_completed / on_launched (devices, completion
  // callbacks), which the destructor must outwait.
  struct ExternalCall {
    explicit ExternalCall(std::atomic<int>& count) : count_(count) { count_.fetch_add(1, std::memory_order_acq_rel); }
    ~ExternalCall() { count_.fetch_sub(1, std::memory_order_acq_rel); }
    std::atomic<int>& count_;
  };

  const std::size_t check_interval_;
  std::atomic<int> external_calls_{0};
  detail::CpuWorkers* cpu_ = nullptr;
  detail::InFlightCounter counter_;
  std::atomic<std::uint32_t> epoch_{0};
  std::atomic<int> waiters_{0};     // in wait_all or the destructor
  std::atomic<int> bp_waiters_{0};  // in back-pressure
  // The completed count at which a frontend's wait past a burst last found
  // the workers standing still (hand_over_held_burst).
  std::atomic<std::uint64_t> burst_stalled_at_{std::numeric_limits<std::uint64_t>::max()};
  detail::PushBuffers buffers_;
  // The flush timer's own (attend_if_stale).
  detail::HeldOpsSample held_at_tick_;
  detail::FlushTimer flush_timer_;  // after buffers_: stops before they go
};

std::unique_ptr<EngineCore> make_threaded_engine(const EngineOptions& options) {
  return std::make_unique<ThreadedEngine>(options);
}

}  // namespace depengine
