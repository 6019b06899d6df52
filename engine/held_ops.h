#pragma once
// HeldOps: when the CPU ops a frontend's pushes made ready beside busy
// neighbours, held for its next blocking call (engine/threaded_engine.cpp),
// get a worker instead. The flush timer decides at each tick, from a sample
// of the engine at this tick and at the previous one: a pure function,
// tested on made-up samples.
//
// Held ops wait for their frontend while it keeps pushing at a streaming
// rate (it will block, or meet back-pressure, soon). They get a worker when
// nothing moved since the previous tick (no push, no completion: nobody
// will block soon, or the thread running ops is in a long one), when a
// slow frontend held them kHeldOpsMaxWait, when the ops in flight reach
// kHeldOpsMaxInFlight (a frontend without back-pressure that never blocks),
// or once the neighbours are gone. (A frontend past kHeldBurst ops in flight
// hands them over itself: engine/threaded_engine.cpp; whether it waits for
// them, and whether the workers' stall in that wait was a long op, is
// decided here too.)

#include <chrono>
#include <cstdint>

#include "sync/spin_wait.h"
#include "sync/tuning.h"

namespace depengine::detail {

struct HeldOpsSample {
  SpinClock::time_point when;
  bool held = false;                   // ops are queued unattended
  SpinClock::time_point held_since{};  // when the first of them was
  std::uint64_t pushed = 0;            // ops pushed so far
  std::uint64_t completed = 0;         // ops completed so far
  std::int64_t in_flight = 0;
  bool neighbours_busy = false;
};

class HeldOps {
 public:
  static constexpr auto kMaxWait = tuning::kHeldOpsMaxWait;
  static constexpr double kStreamingPushesPerUs = tuning::kHeldOpsStreamingPushesPerUs;
  static constexpr std::int64_t kMaxInFlight = tuning::kHeldOpsMaxInFlight;

  /// Whether the ops held at `now` get a worker; `previous` is the sample
  /// of the tick before.
  static bool need_worker(const HeldOpsSample& previous, const HeldOpsSample& now) {
    if (!now.held) return false;
    if (!now.neighbours_busy || now.in_flight >= kMaxInFlight) return true;
    const std::uint64_t pushes = now.pushed - previous.pushed;
    if (previous.held && pushes == 0 && now.completed == previous.completed) return true;
    const double us = std::chrono::duration<double, std::micro>(now.when - previous.when).count();
    const bool streaming = static_cast<double>(pushes) >= kStreamingPushesPerUs * us;
    return !streaming && now.when - now.held_since >= kMaxWait;
  }

  /// Whether the workers, which completed nothing during a burst wait of
  /// `waited_s`, stood still in a long op: they ran for at least
  /// kHeldBurstBusyShare of it (`workers_cpu_s`, the engine's workers' CPU
  /// time over the wait: devices/cpu/worker_clocks.h), or they all sleep at
  /// its end (`workers_asleep()`, asked only then, since it reads /proc:
  /// in ops that wait for something else). Off their cores they run for none
  /// of it and are runnable, and the frontend waits again at its next check,
  /// since they run the burst once back.
  template <class WorkersAsleep>
  static bool stalled_in_long_op(double workers_cpu_s, double waited_s, WorkersAsleep&& workers_asleep) {
    if (waited_s <= 0) return false;
    return workers_cpu_s >= tuning::kHeldBurstBusyShare * waited_s || workers_asleep();
  }

  /// Whether a frontend that handed a burst to a worker yields its core
  /// until the burst ran: not where neighbours keep every core busy and the
  /// worker is on another CPU. A neighbour shares the frontend's CPU then,
  /// and a yield hands it the frontend's turn (EEVDF sets a yielder's
  /// deadline back a slice) while the worker runs the burst elsewhere anyway.
  static bool waits_for_burst(bool neighbours_on_every_core, bool worker_on_this_cpu) {
    return !neighbours_on_every_core || worker_on_this_cpu;
  }
};

}  // namespace depengine::detail
