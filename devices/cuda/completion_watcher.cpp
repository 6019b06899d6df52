#include "devices/cuda/completion_watcher.h"

#include <chrono>

#include "devices/cuda/cuda_check.h"
#include "sync/spin_wait.h"

namespace depengine::detail {

CompletionWatcher::CompletionWatcher(int device) : thread_(Complete{device}, kIdleSpin) {}

namespace {

// Returns once `event` was recorded, or no operation joined it for `quiet`,
// or `most` has passed.
void let_operations_join(const LazyEvent& event, std::chrono::nanoseconds quiet, std::chrono::nanoseconds most) {
  auto last_join = SpinClock::now();
  unsigned joined = event.joined();
  SpinWait spin(most, SpinWait::kNeverYield);
  while (!event.recorded() && spin.round()) {
    if (const unsigned n = event.joined(); n != joined) {
      joined = n;
      last_join = SpinClock::now();
    } else if (SpinClock::now() - last_join >= quiet) {
      return;
    }
  }
}

}  // namespace

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
      let_operations_join(*watched.event, kJoinQuiet, kJoinMost);
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
