#include "devices/cuda/completion_watcher.h"

#include "devices/cuda/cuda_check.h"

namespace depengine::detail {

CompletionWatcher::CompletionWatcher(int device) : thread_(Complete{device}, kIdleSpin) {}

void CompletionWatcher::Complete::operator()(Watched& watched) const {
  // The watcher's first wait makes the device current on its thread.
  thread_local int current = -1;
  if (current != device) {
    cudaSetDevice(device);
    current = device;
  }
  std::exception_ptr error = std::move(watched.error);
  if (watched.event) {
    try {
      watched.event->record(watched.op.name(), device);
      const cudaError_t code = cudaEventSynchronize(watched.event->get());
      if (code != cudaSuccess) {
        std::rethrow_exception(cuda_error(code, "asynchronous CUDA error in " + describe_op(watched.op.name(), device)));
      }
    } catch (...) {
      if (!error) error = std::current_exception();
    }
    watched.event.reset();  // back to the pool before the engine may shut down
  }
  watched.op.complete(std::move(error));
}

}  // namespace depengine::detail
