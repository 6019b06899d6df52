#include "devices/cpu/parked_workers.h"

#include <algorithm>
#include <vector>

namespace depengine::detail {
namespace {

// Every ParkedWorkers of the process, for free_one_elsewhere; the count of
// parked workers among them spares the common case (one engine) the lock.
struct Registry {
  std::mutex mutex;
  std::vector<ParkedWorkers*> all;
  std::atomic<int> parked{0};
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: executors may outlive statics
  return *r;
}

}  // namespace

ParkedWorkers::ParkedWorkers() {
  std::lock_guard lock(registry().mutex);
  registry().all.push_back(this);
}

ParkedWorkers::~ParkedWorkers() {
  std::lock_guard lock(registry().mutex);
  auto& all = registry().all;
  all.erase(std::find(all.begin(), all.end(), this));
}

bool ParkedWorkers::park(std::chrono::nanoseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(mutex_);
  if (closed_) return false;
  ++parked_;
  parked_hint_.store(parked_, std::memory_order_relaxed);
  registry().parked.fetch_add(1, std::memory_order_relaxed);
  while (work_ == 0 && leaves_ == 0) {
    if (woken_.wait_until(lock, deadline) == std::cv_status::timeout && work_ == 0 && leaves_ == 0) {
      // No wake-up left for anyone: this worker's place is among parked_.
      --parked_;
      parked_hint_.store(parked_, std::memory_order_relaxed);
      registry().parked.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
  }
  // Wake-ups are alike: whichever parked worker takes one does as it says.
  if (work_ > 0) {
    --work_;
    return true;
  }
  --leaves_;
  return false;
}

bool ParkedWorkers::unpark() {
  if (parked_hint_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard lock(mutex_);
  return !closed_ && claim(work_);
}

void ParkedWorkers::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  while (claim(leaves_)) {
  }
}

void ParkedWorkers::free_one_elsewhere() const {
  Registry& r = registry();
  if (r.parked.load(std::memory_order_relaxed) <= 0) return;
  std::lock_guard lock(r.mutex);
  for (ParkedWorkers* other : r.all) {
    if (other != this && other->send_away()) return;
  }
}

bool ParkedWorkers::send_away() {
  std::lock_guard lock(mutex_);
  return claim(leaves_);
}

bool ParkedWorkers::claim(int& wakeups) {
  if (parked_ == 0) return false;
  --parked_;
  parked_hint_.store(parked_, std::memory_order_relaxed);
  registry().parked.fetch_sub(1, std::memory_order_relaxed);
  ++wakeups;
  woken_.notify_one();
  return true;
}

}  // namespace depengine::detail
