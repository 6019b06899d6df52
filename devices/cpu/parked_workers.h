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
#include <condition_variable>
#include <mutex>

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
  // Hands one parked worker a wake-up, with work or without (`leaves_`);
  // false when none is parked. Under mutex_.
  bool claim(int& wakeups);
  // Wakes one parked worker without work; whether there was one.
  bool send_away();

  // A condition variable, not a semaphore: libstdc++'s timed semaphore
  // wait yields, then polls in sleeps of half the time waited so far once
  // its first rounds took over 4 µs (as beside busy threads), and a release
  // would be seen that late.
  std::mutex mutex_;
  std::condition_variable woken_;
  // Under mutex_; parked_ + work_ + leaves_ is the number of workers in park().
  int parked_ = 0;  // parked, and not yet handed a wake-up
  int work_ = 0;    // wake-ups with work (unpark), not yet taken
  int leaves_ = 0;  // wake-ups without work (close, send_away), not yet taken
  bool closed_ = false;
  // parked_, read without the lock: most unparks find nobody parked.
  std::atomic<int> parked_hint_{0};
};

}  // namespace depengine::detail
