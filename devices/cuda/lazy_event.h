#pragma once
// LazyEvent: the event behind a run of operations launched one after another
// on one CUDA stream, recorded once, when it is first needed — by the
// stream's CompletionWatcher when it turns to those operations, or by a
// launch on another stream that must wait for one of them.
//
// Why not an event per operation: cudaEventRecord costs the launching thread
// about a quarter of a kernel launch. While the watcher still waits for
// earlier work, the operations launched meanwhile share the next event, and
// the launching thread records none.
//
// Thread safety: join() with the stream's launch mutex held, and only while
// not recorded(); record() takes it, which orders the record behind the work
// of every operation that joined; joined(), recorded() and get() from any
// thread. The
// stream must outlive every call.

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string_view>

#include "devices/cuda/cuda_check.h"

namespace depengine::detail {

class LazyEvent {
 public:
  LazyEvent(std::shared_ptr<CUevent_st> event, cudaStream_t stream, std::mutex& launch_mutex)
      : event_(std::move(event)), stream_(stream), launch_mutex_(launch_mutex) {}

  /// Counts an operation that joined (launch mutex held).
  void join() { joined_.store(joined_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

  /// From any thread: how many operations joined so far; whether it was
  /// recorded.
  unsigned joined() const { return joined_.load(std::memory_order_relaxed); }
  bool recorded() const { return recorded_.load(std::memory_order_acquire); }

  /// Records the event behind everything launched on the stream so far,
  /// unless that was done. Throws, naming operation `name` on cuda:`device`,
  /// when the event could not be recorded.
  void record(std::string_view name, int device) {
    if (!recorded_.load(std::memory_order_acquire)) {
      std::lock_guard lock(launch_mutex_);
      if (!recorded_.load(std::memory_order_relaxed)) {
        status_ = cudaEventRecord(event_.get(), stream_);
        recorded_.store(true, std::memory_order_release);
      }
    }
    if (status_ != cudaSuccess) {
      std::rethrow_exception(cuda_error(status_, "cudaEventRecord for " + describe_op(name, device)));
    }
  }

  /// The event; meaningful once recorded.
  cudaEvent_t get() const { return event_.get(); }

 private:
  std::shared_ptr<CUevent_st> event_;  // from the executor's pool
  cudaStream_t stream_;
  std::mutex& launch_mutex_;
  std::atomic<bool> recorded_{false};
  std::atomic<unsigned> joined_{0};
  cudaError_t status_ = cudaSuccess;  // written before recorded_ is set
};

}  // namespace depengine::detail
