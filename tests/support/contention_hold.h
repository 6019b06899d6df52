#pragma once
// wait_out_contention_hold(): for tests whose subject spins. A core lost by an
// earlier test starts a hold during which no engine thread of the process
// spins (sync/spin_wait.h, at most 0.64 s); such a test starts after it.

#include <chrono>
#include <thread>

#include "sync/spin_wait.h"

inline void wait_out_contention_hold() {
  depengine::detail::Contention& contention = depengine::detail::Contention::process();
  for (int i = 0; i < 1000 && contention.active(depengine::detail::SpinClock::now()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
