#include "devices/cpu/parked_workers.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace depengine::detail {
namespace {

// Every ParkedWorkers of the process, for free_one_elsewhere; the count of
// parked places among them spares the common case (one engine) the lock.
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
  registry().parked.fetch_add(1, std::memory_order_seq_cst);
  parked_.fetch_add(1, std::memory_order_seq_cst);
  // Read after the count: a close() that this load misses claims our place.
  if (!closed_.load(std::memory_order_seq_cst) && wakeups_.try_acquire_for(timeout)) return !took_leave();
  if (claim()) return false;  // our place withdrawn: nobody counts on us
  // An unpark (or a leave) claimed our place first: its release is on the way.
  wakeups_.acquire();
  return !took_leave();
}

bool ParkedWorkers::unpark() {
  if (closed_.load(std::memory_order_seq_cst) || !claim()) return false;
  wakeups_.release();
  return true;
}

void ParkedWorkers::close() {
  closed_.store(true, std::memory_order_seq_cst);
  while (send_away()) {
  }
}

void ParkedWorkers::free_one_elsewhere() const {
  Registry& r = registry();
  if (r.parked.load(std::memory_order_seq_cst) <= 0) return;
  std::lock_guard lock(r.mutex);
  for (ParkedWorkers* other : r.all) {
    if (other != this && other->send_away()) return;
  }
}

bool ParkedWorkers::send_away() {
  if (!claim()) return false;
  leaves_.fetch_add(1, std::memory_order_seq_cst);
  wakeups_.release();
  return true;
}

bool ParkedWorkers::claim() {
  int parked = parked_.load(std::memory_order_seq_cst);
  while (parked > 0) {
    if (parked_.compare_exchange_weak(parked, parked - 1, std::memory_order_seq_cst)) {
      registry().parked.fetch_sub(1, std::memory_order_seq_cst);
      return true;
    }
  }
  return false;
}

bool ParkedWorkers::took_leave() {
  // Wake-ups are alike: whichever worker counts one of the leaves off, as
  // many return false as were sent away.
  int leaves = leaves_.load(std::memory_order_seq_cst);
  while (leaves > 0) {
    if (leaves_.compare_exchange_weak(leaves, leaves - 1, std::memory_order_seq_cst)) return true;
  }
  return false;
}

}  // namespace depengine::detail
