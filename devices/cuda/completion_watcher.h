#pragma once
// CompletionWatcher: tells the engine when the operations launched on one
// CUDA stream have finished on the GPU.
//
// The launching thread hands over each operation with the event recorded
// behind its work; a dedicated host thread waits for the events in launch
// order (cudaEventSynchronize on blocking-sync events: the thread sleeps in
// the driver rather than spinning) and reports each completion, with the
// asynchronous CUDA error the wait returned, if any.
//
// Why not cudaLaunchHostFunc: a host function blocks every later item of its
// stream until it has run, which would put a driver-thread round trip
// between every two kernels of a chain. An event costs the stream nothing.
// One watcher per stream, so a long kernel on one stream never delays the
// completions of another.

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "depengine/executor.h"

namespace depengine::detail {

class CompletionWatcher {
 public:
  explicit CompletionWatcher(int device);
  ~CompletionWatcher();
  CompletionWatcher(const CompletionWatcher&) = delete;
  CompletionWatcher& operator=(const CompletionWatcher&) = delete;

  /// Completes `op` once `event` has completed, with `error` if set (a
  /// failure found at launch) or else with the error the wait reports.
  void watch(ReadyOp op, std::shared_ptr<CUevent_st> event, std::exception_ptr error);
  /// Reports what is still watched, then ends the thread. Idempotent.
  void stop();

 private:
  struct Watched {
    ReadyOp op;
    std::shared_ptr<CUevent_st> event;
    std::exception_ptr error;
  };

  void loop();

  const int device_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Watched> queue_;
  bool sleeping_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace depengine::detail
