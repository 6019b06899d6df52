#pragma once
// ParkedWorkers: worker tasks that ran out of work beside busy threads and
// sleep, for a bounded time, until a submit hands them work again, instead
// of returning their thread to oneTBB.
//
// There oneTBB's idle thread is the wrong place to wait: before it sleeps
// it yields its core in a loop, and under Linux's EEVDF scheduler each
// yield moves the thread's deadline back by a slice (sync/short_slice.h). A
// task enqueued meanwhile waits until the busy threads' deadlines pass its
// own, 100-150 ms beside two busy loops on the 2-core VM. A thread woken
// from a futex is placed afresh and runs within a tick.
//
// A parked worker's task holds its thread of oneTBB's pool, which the
// process's other arenas may need (oneTBB lends a 2-core machine one
// thread): an executor that enqueues a task asks a worker parked by another
// to give its thread back (free_one_elsewhere).
//
// A parked worker counts as inactive; the submit that makes a worker active
// (CpuExecutor::start_worker_if_needed) unparks one where one is parked and
// enqueues a task only otherwise:
//
//   // worker, out of work and retired:
//   if (parked.park(timeout)) continue;  // active again: a submit counted it
//   return;                              // timed out or closed: back to oneTBB
//   // submit, having counted one more active worker:
//   if (!parked.unpark()) arena.enqueue(worker_loop);

#include <atomic>
#include <chrono>
#include <semaphore>

namespace depengine::detail {

class ParkedWorkers {
 public:
  /// Sleeps until unpark() picks the caller, or `timeout` passes, or
  /// close(). True when unparked: the unparking thread counted the caller
  /// as an active worker.
  bool park(std::chrono::nanoseconds timeout);
  /// Wakes one parked worker; false when none is parked (or every parked
  /// one is already being woken), or after close().
  bool unpark();
  /// Wakes every parked worker without work, and makes every later park
  /// return false at once: the executor shuts down, and no unpark races it.
  void close();
  /// Wakes one worker parked in another ParkedWorkers of the process, if
  /// any, without work: its task ends, and its thread goes back to oneTBB.
  void free_one_elsewhere() const;

  ParkedWorkers();
  ~ParkedWorkers();
  ParkedWorkers(const ParkedWorkers&) = delete;
  ParkedWorkers& operator=(const ParkedWorkers&) = delete;

 private:
  // Takes one parked worker's place if there is one.
  bool claim();
  // Wakes one parked worker without work; whether there was one.
  bool send_away();
  // Whether the wake-up just taken is one of send_away()'s.
  bool took_leave();

  std::atomic<int> parked_{0};  // parked, and not yet claimed
  std::atomic<bool> closed_{false};
  std::counting_semaphore<> wakeups_{0};
  std::atomic<int> leaves_{0};  // wake-ups without work released, not yet taken
};

}  // namespace depengine::detail
