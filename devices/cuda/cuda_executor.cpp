#include "devices/cuda/cuda_executor.h"

#include <optional>

#include "depengine/cuda_memory.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device_guard.h"
#include "devices/device_registry.h"
#include "devices/streams/launch_trampoline.h"

namespace depengine::detail {

CudaExecutor::Stream::~Stream() {
  if (watcher) watcher->stop();
  if (handle) cudaStreamDestroy(handle);
}

CudaExecutor::CudaExecutor(int device, const CudaConfig& config)
    : device_(device),
      graphs_(config.graphs),
      selector_(StreamLayout{.compute = config.compute_streams, .high_priority = config.priority_streams}),
      events_(RecyclingPool<CUevent_st>::make(
          [device] {
            DeviceGuard guard(device);
            cudaEvent_t event = nullptr;
            // Blocking sync: the watcher sleeps instead of spinning a core.
            check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync),
                       "cudaEventCreateWithFlags");
            return event;
          },
          [](cudaEvent_t) {}, [](cudaEvent_t event) { cudaEventDestroy(event); })) {
  DeviceGuard guard(device);
  int least = 0, greatest = 0;
  check_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  const StreamLayout& layout = selector_.layout();
  for (int i = 0; i < layout.total(); ++i) {
    const bool high = i >= layout.compute && i < layout.compute + layout.high_priority;
    auto stream = std::make_unique<Stream>();
    // Non-blocking: no implicit synchronization with the legacy default
    // stream, which other code in the process may use.
    check_cuda(cudaStreamCreateWithPriority(&stream->handle, cudaStreamNonBlocking, high ? greatest : least),
               "cudaStreamCreateWithPriority on cuda:" + std::to_string(device));
    stream->watcher = std::make_unique<CompletionWatcher>(device);
    streams_.push_back(std::move(stream));
  }
  check_cuda(cudaStreamCreateWithFlags(&capture_.handle, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}

CudaExecutor::~CudaExecutor() {
  shutdown();
  if (capture_.handle) cudaStreamDestroy(capture_.handle);
}

void CudaExecutor::shutdown() {
  for (auto& stream : streams_) stream->watcher->stop();
}

void CudaExecutor::submit(ReadyOp op) { LaunchTrampoline::run(this, &CudaExecutor::launch, op); }

void CudaExecutor::launch(void* self_ptr, ReadyOp op) noexcept {
  auto* self = static_cast<CudaExecutor*>(self_ptr);
  const int index = self->selector_.choose(op);
  Stream& stream = *self->streams_[index];
  auto context = [&] {
    return RunContext{.device = op.device(), .stream = stream.handle, .stream_index = index,
                      .property = op.property(), .name = op.name()};
  };
  std::exception_ptr error;
  std::shared_ptr<LazyEvent> done;
  bool invoked = false;
  std::optional<DeviceGuard> guard;
  try {
    guard.emplace(self->device_);
    // Before taking this stream's launch mutex: recording takes the
    // predecessor's stream's, and two launches must not hold one each.
    for (const Fence& fence : op.fences()) {
      if (fence.stream_index != index) static_cast<LazyEvent*>(fence.event.get())->record(op.name(), self->device_);
    }
  } catch (...) {
    error = std::current_exception();
  }
  if (!error) {
    std::lock_guard lock(stream.launch_mutex);
    try {
      for (const Fence& fence : op.fences()) {
        if (fence.stream_index == index) continue;  // a stream runs in order
        check_cuda(cudaStreamWaitEvent(stream.handle, static_cast<LazyEvent*>(fence.event.get())->get(), 0),
                   "cudaStreamWaitEvent for " + describe_op(op.name(), self->device_));
      }
      const StreamGraph graph = op.stream_graph();
      // A predecessor that failed before this launch: skip the function but
      // still join the event, so the completion follows the predecessors.
      // (A replay skips node by node.)
      if (!op.fences().empty() && !graph) error = op.input_error();
      if (!error || op.is_async()) {
        // Drop a stale error of this thread's earlier CUDA calls, so that
        // the check below reports this operation's own launch failures.
        cudaGetLastError();
        RunContext ctx = context();
        invoked = true;
        error = graph ? self->replay_graph(graph, ctx) : op.invoke(ctx);
        if (const cudaError_t code = cudaGetLastError(); !error && code != cudaSuccess) {
          error = cuda_error(code, "launch failed in " + describe_op(op.name(), self->device_));
        }
      }
      if (!op.is_async()) {
        // Joined even after a failure: the work enqueued before it may
        // still run, and the completion (which lets deletion free buffers)
        // must wait for it.
        if (!stream.open_event || stream.open_event->recorded()) {
          stream.open_event = std::make_shared<LazyEvent>(self->events_->acquire(), stream.handle, stream.launch_mutex);
        }
        done = stream.open_event;
        done->join();
      }
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (op.is_async()) {
    // Only its own Completion can complete an async op: run it even when
    // CUDA failed before, its own CUDA calls then fail and report it.
    if (!invoked) {
      RunContext ctx = context();
      op.invoke(ctx);
    }
    return;
  }
  if (!error) op.launched(Fence{op.device(), index, done});
  stream.watcher->watch(op, std::move(done), std::move(error));
}

std::exception_ptr CudaExecutor::replay_graph(const StreamGraph& graph, const RunContext& ctx) {
  std::exception_ptr error;
  graph.begin(ctx);
  try {
    if (!graphs_ || graph.failed()) {
      for (std::uint32_t node = 0; node < graph.size(); ++node) graph.run(node, ctx);
    } else {
      std::shared_ptr<void>& state = graph.device_state();
      if (!state) state = std::make_shared<CudaGraphReplay>();
      static_cast<CudaGraphReplay*>(state.get())->replay(graph, ctx, capture_);
    }
  } catch (...) {
    error = std::current_exception();
  }
  graph.end(ctx);
  return error;
}

DeviceFactory cuda_device_factory() {
  return [](Device device) -> std::unique_ptr<Executor> {
    if (device.index >= cuda_device_count()) return nullptr;
    return std::make_unique<CudaExecutor>(device.index, cuda_config_from_environment());
  };
}

}  // namespace depengine::detail
