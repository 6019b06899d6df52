#include "engine/stall_watch.h"

#include <cstdio>
#include <memory>

#include "sync/environment.h"

namespace depengine::detail {

StallWatch::StallWatch(std::chrono::milliseconds threshold) : threshold_(threshold), thread_([this] { watch(); }) {}

StallWatch::~StallWatch() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

std::unique_ptr<StallWatch> StallWatch::from_environment() {
  const long long ms = integer_from_environment("DEPENGINE_STALL_WARNING_MS", 0, 1, 86'400'000);
  if (ms == 0) return nullptr;
  return std::make_unique<StallWatch>(std::chrono::milliseconds(ms));
}

void StallWatch::pushed(const OpBlock& op) {
  InFlight entry{std::chrono::steady_clock::now(), std::string(op.name_view()), op.device};
  bool was_empty;
  {
    std::lock_guard lock(mutex_);
    was_empty = in_flight_.empty();
    in_flight_.insert_or_assign(&op, std::move(entry));
  }
  if (was_empty) wake_.notify_one();
}

void StallWatch::finished(const OpBlock& op) {
  std::lock_guard lock(mutex_);
  in_flight_.erase(&op);
}

void StallWatch::watch() {
  // Checks twice per threshold: an op is reported at most 1.5 thresholds
  // after its push.
  const auto period = std::max(threshold_ / 2, std::chrono::milliseconds(1));
  std::unique_lock lock(mutex_);
  for (;;) {
    // Asleep while nothing is in flight: an idle engine uses no CPU.
    wake_.wait(lock, [this] { return stopping_ || !in_flight_.empty(); });
    if (wake_.wait_for(lock, period, [this] { return stopping_; })) return;
    const auto now = std::chrono::steady_clock::now();
    for (auto& [op, entry] : in_flight_) {
      if (entry.reported || now - entry.pushed < threshold_) continue;
      entry.reported = true;
      const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - entry.pushed).count();
      std::fprintf(stderr, "depengine: operation '%s' on %s in flight for %lld ms (DEPENGINE_STALL_WARNING_MS)\n",
                   entry.name.empty() ? "(unnamed)" : entry.name.c_str(), entry.device.to_string().c_str(),
                   static_cast<long long>(age));
    }
  }
}

}  // namespace depengine::detail
