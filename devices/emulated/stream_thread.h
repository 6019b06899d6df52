#pragma once
// StreamThread: one in-order stream of the emulated device — a host thread
// that runs the work queued on it one item at a time, in queue order, and
// sleeps on a condition variable when there is none.

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "depengine/detail/inline_function.h"
#include "depengine/emulated_device.h"

namespace depengine::detail {

class StreamThread final : public EmulatedStream {
 public:
  using Work = InlineFunction<void()>;

  StreamThread(Device device, StreamRole role, int index);
  /// Runs what is still queued, then joins the thread.
  ~StreamThread();
  StreamThread(const StreamThread&) = delete;
  StreamThread& operator=(const StreamThread&) = delete;

  /// Queues `work` behind everything queued before. Never blocks on work.
  void enqueue(Work work);
  /// Runs what is queued, then ends the thread. Idempotent.
  void stop();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Work> queue_;  // swapped out whole by the thread
  bool sleeping_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace depengine::detail
