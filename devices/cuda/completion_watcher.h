#pragma once
// CompletionWatcher: tells the engine when the operations launched on one
// CUDA stream have finished on the GPU.
//
// The launching thread hands over each operation with the LazyEvent its work
// joined; a dedicated host thread takes them in launch order, records the
// event if no one has yet, waits for it (cudaEventSynchronize on
// blocking-sync events: the thread sleeps in the driver rather than
// spinning) and reports each completion, with the asynchronous CUDA error
// the wait returned, if any.
//
// Before recording an event, the watcher lets operations join it while the
// launching thread keeps adding them (until none came for kJoinQuiet, at most
// kJoinMost): recording and waiting per operation would make the watcher the
// bottleneck of a stream of small operations (about 2 us each on an H200's
// host), and its driver calls slow the launching thread's. A completion is
// reported at most kJoinMost later for it.
//
// Why not cudaLaunchHostFunc: a host function blocks every later item of its
// stream until it has run, which would put a driver-thread round trip
// between every two kernels of a chain. An event costs the stream nothing.
// One watcher per stream, so a long kernel on one stream never delays the
// completions of another.

#include <cuda_runtime_api.h>

#include <chrono>
#include <exception>
#include <memory>

#include "depengine/executor.h"
#include "devices/cuda/lazy_event.h"
#include "devices/streams/batch_thread.h"

namespace depengine::detail {

class CompletionWatcher {
 public:
  explicit CompletionWatcher(int device);
  CompletionWatcher(const CompletionWatcher&) = delete;
  CompletionWatcher& operator=(const CompletionWatcher&) = delete;

  /// Completes `op` once `event` has completed, with `error` if set (a
  /// failure found at launch) or else with the error the wait reports.
  void watch(ReadyOp op, std::shared_ptr<LazyEvent> event, std::exception_ptr error) {
    thread_.enqueue({op, std::move(event), std::move(error)});
  }
  /// Reports what is still watched, then ends the thread. Idempotent.
  void stop() { thread_.stop(); }

 private:
  struct Watched {
    ReadyOp op;
    std::shared_ptr<LazyEvent> event;
    std::exception_ptr error;
  };
  struct Complete {
    int device;
    void operator()(Watched& watched) const;
  };

  static constexpr std::chrono::microseconds kJoinQuiet{10};
  static constexpr std::chrono::microseconds kJoinMost{100};
  // A frontend launching a chain of small kernels hands over an operation
  // every few microseconds, and the GPU often finishes each before the next
  // arrives: without the spin, every launch would pay for waking the watcher.
  static constexpr std::chrono::microseconds kIdleSpin{50};

  BatchThread<Watched, Complete> thread_;
};

}  // namespace depengine::detail
