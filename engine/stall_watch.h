#pragma once
// StallWatch: the opt-in diagnostic of DEPENGINE_STALL_WARNING_MS. It keeps
// the pushed operations that have not completed, with their push time, and a
// thread of its own prints to stderr each one still in flight after the
// threshold, once, with its name: an async operation whose Completion is
// never called would otherwise hang wait_all without a word.
//
// Off unless the variable is set: then every push and completion takes a
// mutex, which is what a diagnostic may cost.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "engine/op_block.h"

namespace depengine::detail {

class StallWatch {
 public:
  explicit StallWatch(std::chrono::milliseconds threshold);
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  /// Reads DEPENGINE_STALL_WARNING_MS: null when unset; throws
  /// std::invalid_argument unless it is a whole number from 1 to 86,400,000.
  static std::unique_ptr<StallWatch> from_environment();

  void pushed(const OpBlock& op);
  void finished(const OpBlock& op);

 private:
  struct InFlight {
    std::chrono::steady_clock::time_point pushed;
    std::string name;
    Device device;
    bool reported = false;
  };
  void watch();

  const std::chrono::milliseconds threshold_;
  std::mutex mutex_;
  std::condition_variable wake_;  // stopping, or the first op in flight
  bool stopping_ = false;
  std::unordered_map<const OpBlock*, InFlight> in_flight_;  // guarded by mutex_
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace depengine::detail
