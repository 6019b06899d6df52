#include "devices/cpu/worker_placement.h"

#include <algorithm>

#include "sync/machine_load.h"
#include "sync/tuning.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace depengine::detail {
int WorkerPlacement::current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

std::vector<int> WorkerPlacement::allowed_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
#endif
  return cpus;
}

WorkerPlacement::WorkerPlacement(int workers)
    : slots_(std::max(workers, 1)), cpu_of_(std::make_unique<std::atomic<int>[]>(static_cast<std::size_t>(slots_))) {
  for (int i = 0; i < slots_; ++i) cpu_of_[i].store(-1, std::memory_order_relaxed);
}

int WorkerPlacement::target_cpu(int current, const std::vector<int>& others, const std::vector<int>& allowed) {
  if (current < 0 || std::find(others.begin(), others.end(), current) == others.end()) return -1;
  for (const int cpu : allowed) {
    if (std::find(others.begin(), others.end(), cpu) == others.end()) return cpu;
  }
  return -1;
}

bool WorkerPlacement::move_to(int cpu) {
#if defined(__linux__)
  cpu_set_t before, one;
  if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof(before), &before) != 0) return false;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof(one), &one) != 0) return false;
  const bool moved = sched_getcpu() == cpu;
  sched_setaffinity(0, sizeof(before), &before);
  return moved;
#else
  (void)cpu;
  return false;
#endif
}

int WorkerPlacement::arrive(bool late) {
  return arrive_at(current_cpu(), SpinClock::now(), Contention::process(), mover(), &allowed_cpus, late);
}

WorkerPlacement::Move WorkerPlacement::mover() {
  // Beside threads of others that keep cores busy (MachineLoad), a CPU free
  // of workers is no idle one either, and the move's wait for the migration
  // is a wait for a core.
  return MachineLoad::process().neighbours_busy() ? nullptr : &move_to;
}

int WorkerPlacement::arrive_at(int cpu, SpinClock::time_point now, const Contention& contention, Move move,
                               AllowedCpus allowed, bool late) {
  if (cpu < 0) return -1;
  int slot = -1;
  for (int i = 0; i < slots_ && slot < 0; ++i) {
    int free = -1;
    if (cpu_of_[i].compare_exchange_strong(free, cpu, std::memory_order_acq_rel)) slot = i;
  }
  if (slot < 0) return -1;
  const int moved_to = move_off_workers(cpu, slot, now, /*gap=*/!late, contention, move, allowed);
  if (moved_to >= 0) cpu_of_[slot].store(moved_to, std::memory_order_release);
  return slot;
}

void WorkerPlacement::recheck(int slot) {
  if (slot < 0) return;  // a helper: it has no place to keep
  recheck_at(slot, current_cpu(), &SpinClock::now, Contention::process(), mover(), &allowed_cpus);
}

void WorkerPlacement::recheck_at(int slot, int cpu, Clock now, const Contention& contention, Move move,
                                 AllowedCpus allowed) {
  if (slot < 0 || cpu < 0) return;
  // Written only when it changed: the slots share a line that every
  // worker's recheck reads.
  if (cpu_of_[slot].load(std::memory_order_relaxed) != cpu) cpu_of_[slot].store(cpu, std::memory_order_release);
  if (!shared(cpu, slot)) return;
  const int moved_to = move_off_workers(cpu, slot, now(), /*gap=*/true, contention, move, allowed);
  if (moved_to >= 0) cpu_of_[slot].store(moved_to, std::memory_order_release);
}

bool WorkerPlacement::step_off(bool gap) {
  const int cpu = current_cpu();
  if (!occupied(cpu)) return false;  // the common case, without a clock read
  return step_off_at(cpu, SpinClock::now(), gap, Contention::process(), mover(), &allowed_cpus);
}

bool WorkerPlacement::step_off_at(int cpu, SpinClock::time_point now, bool gap, const Contention& contention,
                                  Move move, AllowedCpus allowed) {
  return cpu >= 0 && move_off_workers(cpu, /*own=*/-1, now, gap, contention, move, allowed) >= 0;
}

int WorkerPlacement::move_off_workers(int cpu, int own, SpinClock::time_point now, bool gap,
                                      const Contention& contention, Move move, AllowedCpus allowed) {
  // The common case costs one look at the workers: a system call only when
  // the thread shares a CPU with one. While the process's threads lose
  // their cores to others (sync/spin_wait.h), a CPU free of workers is no
  // idle one: stay. And at most one move per kWorkerMoveGap where asked: on
  // a busy machine workers start often, and moves that often cost more than
  // they gain; a look that finds no free CPU does not count (a frontend
  // beside as many active workers as CPUs finds none at every look).
  if (!shared(cpu, own) || move == nullptr || contention.active(now)) return -1;
  const std::int64_t ticks = now.time_since_epoch().count();
  std::int64_t last = last_move_.load(std::memory_order_relaxed);
  const auto min_gap = std::chrono::duration_cast<SpinClock::duration>(tuning::kWorkerMoveGap).count();
  if (gap && ticks - last < min_gap) return -1;
  std::vector<int> others;
  for (int i = 0; i < slots_; ++i) {
    if (i != own) others.push_back(cpu_of_[i].load(std::memory_order_acquire));
  }
  const int target = target_cpu(cpu, others, allowed());
  if (target < 0 || (gap && !last_move_.compare_exchange_strong(last, ticks, std::memory_order_relaxed))) return -1;
  if (!move(target)) return -1;
  if (!gap) last_move_.store(ticks, std::memory_order_relaxed);
  return target;
}

bool WorkerPlacement::shared(int cpu, int own) const {
  for (int i = 0; i < slots_; ++i) {
    if (i != own && cpu_of_[i].load(std::memory_order_acquire) == cpu) return true;
  }
  return false;
}

bool WorkerPlacement::occupied(int cpu) const { return cpu >= 0 && shared(cpu, /*own=*/-1); }

void WorkerPlacement::leave(int slot) {
  if (slot >= 0) cpu_of_[slot].store(-1, std::memory_order_release);
}

}  // namespace depengine::detail
