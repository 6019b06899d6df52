#include "devices/cpu/worker_clocks.h"

#if defined(__linux__)
#include <pthread.h>
#endif

namespace depengine::detail {
namespace {

std::optional<double> seconds_on(clockid_t clock) {
  timespec t{};
  if (clock_gettime(clock, &t) != 0) return std::nullopt;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

int WorkerClocks::enter() {
#if defined(__linux__)
  clockid_t clock{};
  if (pthread_getcpuclockid(pthread_self(), &clock) != 0) return -1;
  const std::optional<double> now = seconds_on(CLOCK_THREAD_CPUTIME_ID);
  if (!now) return -1;
  const std::lock_guard lock(mutex_);
  std::size_t slot = 0;
  while (slot < slots_.size() && slots_[slot].used) ++slot;
  if (slot == slots_.size()) slots_.emplace_back();
  slots_[slot] = {.clock = clock, .at_enter_s = *now, .used = true};
  return static_cast<int>(slot);
#else
  return -1;
#endif
}

void WorkerClocks::leave(int slot) {
  if (slot < 0) return;
  const std::optional<double> now = seconds_on(CLOCK_THREAD_CPUTIME_ID);
  const std::lock_guard lock(mutex_);
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  if (now) ended_s_ += *now - s.at_enter_s;
  s.used = false;
}

std::optional<double> WorkerClocks::seconds() const {
#if defined(__linux__)
  const std::lock_guard lock(mutex_);
  double total = ended_s_;
  for (const Slot& s : slots_) {
    if (!s.used) continue;
    const std::optional<double> now = seconds_on(s.clock);
    if (!now) return std::nullopt;
    total += *now - s.at_enter_s;
  }
  return total;
#else
  return std::nullopt;
#endif
}

}  // namespace depengine::detail
