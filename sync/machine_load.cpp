#include "sync/machine_load.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

#if defined(__linux__)
#include <sched.h>
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
  const double others_s = (b.cpus_busy_s - a.cpus_busy_s) - (b.engine_s - a.engine_s);
  return std::max(0.0, others_s) / wall_s;
}

std::optional<unsigned long long> MachineLoad::busy_ticks(std::string_view proc_stat,
                                                          const std::function<bool(int)>& counted) {
  unsigned long long busy = 0;
  bool any = false;
  while (!proc_stat.empty()) {
    const std::size_t end = std::min(proc_stat.find('\n'), proc_stat.size());
    const std::string line(proc_stat.substr(0, end));
    proc_stat.remove_prefix(std::min(end + 1, proc_stat.size()));
    // "cpuN user nice system idle iowait irq softirq ...": one CPU's line
    // (the first line, "cpu  ...", sums them all).
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || std::isdigit(static_cast<unsigned char>(line[3])) == 0) {
      continue;
    }
    int cpu = -1;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
    if (std::sscanf(line.c_str(), "cpu%d %llu %llu %llu %llu %llu %llu %llu", &cpu, &user, &nice, &system, &idle,
                    &iowait, &irq, &softirq) < 5 ||
        cpu < 0 || !counted(cpu)) {
      continue;
    }
    busy += user + nice + system + irq + softirq;
    any = true;
  }
  if (!any) return std::nullopt;
  return busy;
}

std::optional<CpuTimeSample> MachineLoad::sample(SpinClock::time_point now) {
#if defined(__linux__)
  std::FILE* stat = std::fopen("/proc/stat", "r");
  if (stat == nullptr) return std::nullopt;
  std::string text;
  char chunk[4096];
  for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, stat)) > 0;) text.append(chunk, n);
  std::fclose(stat);
  // Only the CPUs this process may run on: threads on the others take no
  // core from it (a container's cpuset, mpirun's binding).
  cpu_set_t mask;
  const bool masked = sched_getaffinity(0, sizeof mask, &mask) == 0;
  const auto ticks = busy_ticks(text, [&](int cpu) { return !masked || (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &mask)); });
  const std::optional<double> engine_s = EngineThreadClock::seconds();
  if (!ticks || !engine_s) return std::nullopt;
  const double tick_s = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  return CpuTimeSample{.when = now, .cpus_busy_s = static_cast<double>(*ticks) * tick_s, .engine_s = *engine_s};
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
  // Neighbours that compete with the engine's threads for the cores get
  // less than they want: a quarter core past a whole one is another core
  // they would keep busy (two busy loops beside an engine on 2 cores got
  // 1.3-1.5 of them in most windows, 0.9-1.7 in all).
  const int cores = static_cast<int>(std::ceil(others - kCoreRoundingDown));
  neighbour_cores_.store(busy ? std::max(1, cores) : 0, std::memory_order_relaxed);
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

void MachineLoad::pin(bool busy, int cores) {
  // Not while a sample is judged: its verdict would come after this one.
  while (sampling_.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  pinned_.store(true, std::memory_order_relaxed);
  judged_at_.store(SpinClock::duration::max().count(), std::memory_order_relaxed);  // never too old
  neighbour_cores_.store(busy ? std::max(1, cores) : 0, std::memory_order_relaxed);
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
