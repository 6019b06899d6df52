#include "sync/engine_thread_clock.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "sync/clock_seconds.h"

#if defined(__linux__)
#include <pthread.h>
#include <time.h>
#endif

namespace depengine::detail {
namespace {

#if defined(__linux__)
struct Registry {
  std::mutex mutex;
  std::vector<clockid_t> live;  // the enlisted threads' clocks
  double ended_s = 0;           // what the enlisted threads that ended spent
};

// Never destroyed: threads may end after static destruction began.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// Removes its thread's clock, keeping its time, as the thread ends.
struct Enlisted {
  clockid_t clock{};
  bool counted = false;
  ~Enlisted() {
    if (!counted) return;
    const std::optional<double> now = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    if (now) r.ended_s += *now;
    r.live.erase(std::remove(r.live.begin(), r.live.end(), clock), r.live.end());
  }
};
#endif

}  // namespace

void EngineThreadClock::enlist_slow() {
  t_enlisted = true;
#if defined(__linux__)
  thread_local Enlisted enlisted;
  if (pthread_getcpuclockid(pthread_self(), &enlisted.clock) != 0) return;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.live.push_back(enlisted.clock);
  enlisted.counted = true;
#endif
}

std::optional<double> EngineThreadClock::seconds() {
#if defined(__linux__)
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  double total = r.ended_s;
  for (const clockid_t clock : r.live) {
    const std::optional<double> now = clock_seconds(clock);
    if (!now) return std::nullopt;
    total += *now;
  }
  return total;
#else
  return std::nullopt;
#endif
}

}  // namespace depengine::detail
