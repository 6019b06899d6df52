#include "devices/cpu/parked_workers.h"

namespace depengine::detail {

bool ParkedWorkers::park(std::chrono::nanoseconds timeout) {
  parked_.fetch_add(1, std::memory_order_seq_cst);
  // Read after the count: a close() that this load misses claims our place.
  if (!closed_.load(std::memory_order_seq_cst) && wakeups_.try_acquire_for(timeout)) return !took_closing_wakeup();
  if (claim()) return false;  // our place withdrawn: nobody counts on us
  // An unpark (or close) claimed our place first: its release is on the way.
  wakeups_.acquire();
  return !took_closing_wakeup();
}

bool ParkedWorkers::unpark() {
  if (closed_.load(std::memory_order_seq_cst) || !claim()) return false;
  wakeups_.release();
  return true;
}

void ParkedWorkers::close() {
  closed_.store(true, std::memory_order_seq_cst);
  while (claim()) {
    closing_wakeups_.fetch_add(1, std::memory_order_seq_cst);
    wakeups_.release();
  }
}

bool ParkedWorkers::took_closing_wakeup() {
  // Wake-ups are alike: whichever worker counts one of close()'s off, as
  // many return false as close() released.
  int closing = closing_wakeups_.load(std::memory_order_seq_cst);
  while (closing > 0) {
    if (closing_wakeups_.compare_exchange_weak(closing, closing - 1, std::memory_order_seq_cst)) return true;
  }
  return false;
}

bool ParkedWorkers::claim() {
  int parked = parked_.load(std::memory_order_seq_cst);
  while (parked > 0) {
    if (parked_.compare_exchange_weak(parked, parked - 1, std::memory_order_seq_cst)) return true;
  }
  return false;
}

}  // namespace depengine::detail
