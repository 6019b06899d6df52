#pragma once
// StreamThread: one in-order stream of the emulated device — a host thread
// that runs the work queued on it one item at a time, in queue order, and
// sleeps when there is none.

#include <chrono>

#include "depengine/detail/inline_function.h"
#include "depengine/emulated_device.h"
#include "devices/streams/batch_thread.h"

namespace depengine::detail {

class StreamThread final : public EmulatedStream {
 public:
  using Work = InlineFunction<void()>;

  StreamThread(Device device, StreamRole role, int index)
      : EmulatedStream(device, role, index), thread_(Run{}, std::chrono::nanoseconds{0}) {}

  /// Queues `work` behind everything queued before. Never blocks on work.
  void enqueue(Work work) { thread_.enqueue(std::move(work)); }
  /// Runs what is queued, then ends the thread. Idempotent.
  void stop() { thread_.stop(); }

 private:
  struct Run {
    void operator()(Work& work) const { work(); }
  };

  // No idle spin: an emulated stream stands for GPU hardware, which takes
  // nothing from the host's cores; its host thread must not either.
  BatchThread<Work, Run> thread_;
};

}  // namespace depengine::detail
