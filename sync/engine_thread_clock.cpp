#include "sync/engine_thread_clock.h"

#include <algorithm>
#include <mutex>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <time.h>
#endif

namespace depengine::detail {
namespace {

#if defined(__linux__)
double seconds_of(const timespec& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9; }

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
    timespec now{};
    const bool read = clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) == 0;
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    if (read) r.ended_s += seconds_of(now);
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
    timespec t{};
    if (clock_gettime(clock, &t) != 0) return std::nullopt;
    total += seconds_of(t);
  }
  return total;
#else
  return std::nullopt;
#endif
}

}  // namespace depengine::detail
