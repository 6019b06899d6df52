#include "sync/machine_load.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#if defined(__linux__)
#include <unistd.h>
#endif

#include "sync/engine_thread_clock.h"

namespace depengine::detail {

MachineLoad::MachineLoad() {
  if (auto first = sample(SpinClock::now())) {
    last_ = *first;
    have_last_ = true;
  }
}

double MachineLoad::others_busy_cores(const CpuTimeSample& a, const CpuTimeSample& b) {
  const double wall_s = std::chrono::duration<double>(b.when - a.when).count();
  if (wall_s <= 0) return 0;
  const double others_s = (b.machine_busy_s - a.machine_busy_s) - (b.engine_s - a.engine_s);
  return std::max(0.0, others_s) / wall_s;
}

std::optional<CpuTimeSample> MachineLoad::sample(SpinClock::time_point now) {
#if defined(__linux__)
  std::FILE* stat = std::fopen("/proc/stat", "r");
  if (stat == nullptr) return std::nullopt;
  // The first line: "cpu  user nice system idle iowait irq softirq steal ...".
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  const int fields = std::fscanf(stat, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle,
                                 &iowait, &irq, &softirq, &steal);
  std::fclose(stat);
  const std::optional<double> engine_s = EngineThreadClock::seconds();
  if (fields < 4 || !engine_s) return std::nullopt;
  const double tick_s = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  return CpuTimeSample{.when = now,
                       .machine_busy_s = static_cast<double>(user + nice + system + irq + softirq) * tick_s,
                       .engine_s = *engine_s};
#else
  (void)now;
  return std::nullopt;
#endif
}

void MachineLoad::update(SpinClock::time_point now) {
  if (sampling_.exchange(true, std::memory_order_acquire)) return;  // another thread samples (or pins)
  if (pinned_.load(std::memory_order_relaxed)) {
    sampling_.store(false, std::memory_order_release);
    return;
  }
  if (!have_last_ || now - last_.when >= kWindow) {
    if (auto next = sample(now)) {
      if (have_last_) judge(last_, *next);
      last_ = *next;
      have_last_ = true;
    }
  }
  sampling_.store(false, std::memory_order_release);
}

void MachineLoad::judge(const CpuTimeSample& a, const CpuTimeSample& b) {
  // The time before the verdict: a reader that sees the verdict sees its time.
  judged_at_.store(b.when.time_since_epoch().count(), std::memory_order_relaxed);
  const double others = others_busy_cores(a, b);
  const bool busy = others >= kBusyCores;
  neighbour_cores_.store(busy ? std::max(1, static_cast<int>(std::lround(others))) : 0, std::memory_order_relaxed);
  neighbours_busy_.store(busy, std::memory_order_release);
}

bool MachineLoad::neighbours_busy(SpinClock::time_point now) const {
  if (!neighbours_busy_.load(std::memory_order_acquire)) return false;
  const SpinClock::time_point judged{SpinClock::duration(judged_at_.load(std::memory_order_relaxed))};
  return now - judged <= kVerdictLife;
}

bool MachineLoad::neighbours_busy() const {
  return neighbours_busy_.load(std::memory_order_relaxed) && neighbours_busy(SpinClock::now());
}

void MachineLoad::pin(bool busy) {
  // Not while a sample is judged: its verdict would come after this one.
  while (sampling_.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  pinned_.store(true, std::memory_order_relaxed);
  judged_at_.store(SpinClock::duration::max().count(), std::memory_order_relaxed);  // never too old
  neighbour_cores_.store(busy ? 1 : 0, std::memory_order_relaxed);
  neighbours_busy_.store(busy, std::memory_order_release);
  sampling_.store(false, std::memory_order_release);
}

void MachineLoad::unpin() {
  while (sampling_.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  pinned_.store(false, std::memory_order_relaxed);
  neighbours_busy_.store(false, std::memory_order_release);
  judged_at_.store(0, std::memory_order_relaxed);
  sampling_.store(false, std::memory_order_release);
}

MachineLoad& MachineLoad::process() {
  static MachineLoad load;
  return load;
}

}  // namespace depengine::detail
