#pragma once
// Helpers for the device tests: a gate that device work waits on, with a
// bound so that a broken engine fails the test instead of hanging it.

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace depengine::testing {

// Long enough never to expire on a loaded CI machine; only a bug reaches it.
inline constexpr auto kGiveUp = std::chrono::seconds(20);

class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  /// False if the gate stayed shut for kGiveUp.
  bool wait() {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kGiveUp, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace depengine::testing
