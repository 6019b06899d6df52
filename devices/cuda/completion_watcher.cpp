#include "devices/cuda/completion_watcher.h"

#include "devices/cuda/cuda_check.h"

namespace depengine::detail {

CompletionWatcher::CompletionWatcher(int device) : device_(device), thread_([this] { loop(); }) {}

CompletionWatcher::~CompletionWatcher() { stop(); }

void CompletionWatcher::watch(ReadyOp op, std::shared_ptr<CUevent_st> event, std::exception_ptr error) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({op, std::move(event), std::move(error)});
    wake = sleeping_;
    sleeping_ = false;
  }
  if (wake) cv_.notify_one();
}

void CompletionWatcher::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void CompletionWatcher::loop() {
  cudaSetDevice(device_);
  std::vector<Watched> batch;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      while (queue_.empty() && !stopping_) {
        sleeping_ = true;
        cv_.wait(lock);
      }
      if (queue_.empty()) return;
      batch.swap(queue_);
    }
    for (Watched& w : batch) {
      std::exception_ptr error = std::move(w.error);
      if (w.event) {
        const cudaError_t code = cudaEventSynchronize(w.event.get());
        if (!error && code != cudaSuccess) {
          error = cuda_error(code, "asynchronous CUDA error in " + describe_op(w.op.name(), device_));
        }
        w.event.reset();  // back to the pool before the engine may shut down
      }
      w.op.complete(std::move(error));
    }
    batch.clear();
  }
}

}  // namespace depengine::detail
