#include "devices/cpu/worker_clocks.h"

#include <fstream>
#include <string>

#if defined(__linux__)
#include <pthread.h>
#include <unistd.h>
#endif

#include "sync/clock_seconds.h"

namespace depengine::detail {
namespace {

#if defined(__linux__)
// The state of the thread `id` of this process: the letter that follows its
// name in /proc (R runnable or running; S, D asleep). None where it cannot
// be read.
std::optional<char> state_of(int id) {
  std::ifstream in("/proc/self/task/" + std::to_string(id) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const std::size_t name_end = line.rfind(')');  // the name may hold spaces and parentheses
  if (name_end == std::string::npos || name_end + 2 >= line.size()) return std::nullopt;
  return line[name_end + 2];
}
#endif

}  // namespace

int WorkerClocks::enter() {
#if defined(__linux__)
  clockid_t clock{};
  if (pthread_getcpuclockid(pthread_self(), &clock) != 0) return -1;
  const std::optional<double> now = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
  if (!now) return -1;
  const std::lock_guard lock(mutex_);
  std::size_t slot = 0;
  while (slot < slots_.size() && slots_[slot].used) ++slot;
  if (slot == slots_.size()) slots_.emplace_back();
  thread_local const int t_thread = static_cast<int>(gettid());
  slots_[slot] = {.clock = clock, .thread = t_thread, .at_enter_s = *now, .used = true};
  return static_cast<int>(slot);
#else
  return -1;
#endif
}

void WorkerClocks::leave(int slot) {
  if (slot < 0) return;
  const std::optional<double> now = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
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
    const std::optional<double> now = clock_seconds(s.clock);
    if (!now) return std::nullopt;
    total += *now - s.at_enter_s;
  }
  return total;
#else
  return std::nullopt;
#endif
}

bool WorkerClocks::all_asleep() const {
#if defined(__linux__)
  std::vector<int> threads;
  {
    const std::lock_guard lock(mutex_);
    for (const Slot& s : slots_) {
      if (s.used) threads.push_back(s.thread);
    }
  }
  if (threads.empty()) return false;
  for (const int id : threads) {
    const std::optional<char> state = state_of(id);
    if (!state || *state == 'R') return false;
  }
  return true;
#else
  return false;
#endif
}

}  // namespace depengine::detail
