#pragma once
// CudaExecutor: the executor of one GPU.
//
// Launching an operation, on the thread that submits it: make sure the
// events of its predecessors on other streams are recorded, make the chosen
// stream wait for them (cudaStreamWaitEvent), run the operation's function
// with ctx.stream set to that stream (it enqueues kernels and copies), check
// the launch, and report the launch with the stream's open LazyEvent as the
// fence. The engine may then launch successors at once; the stream's
// CompletionWatcher records that event when it gets to it, and reports the
// completion when the event has completed.
//
// A graph replay whose ops all sit on this GPU (ReadyOp::stream_graph) is
// launched the same way, on one stream, as CUDA graphs (CudaGraphReplay).

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <vector>

#include "depengine/executor.h"
#include "devices/cuda/completion_watcher.h"
#include "devices/cuda/cuda_config.h"
#include "devices/cuda/cuda_graph_replay.h"
#include "devices/cuda/lazy_event.h"
#include "devices/streams/recycling_pool.h"
#include "devices/streams/stream_selector.h"

namespace depengine::detail {

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(int device, const CudaConfig& config);
  ~CudaExecutor() override;

  void submit(ReadyOp op) override;
  bool uses_fences() const override { return true; }
  void shutdown() override;

 private:
  struct Stream {
    cudaStream_t handle = nullptr;
    // Keeps one operation's function, launch check and joining open_event
    // together, and event records apart from them, so that an event covers
    // the whole work of every operation that joined it.
    std::mutex launch_mutex;
    std::shared_ptr<LazyEvent> open_event;  // under launch_mutex
    std::unique_ptr<CompletionWatcher> watcher;
    ~Stream();
  };

  static void launch(void* self, ReadyOp op) noexcept;
  /// The nodes' failures stay with the graph; returns a failure of the launch
  /// (a kernel's launch error is left for the caller's cudaGetLastError).
  std::exception_ptr replay_graph(const StreamGraph& graph, const RunContext& ctx);

  const int device_;
  const bool graphs_;
  StreamSelector selector_;
  std::shared_ptr<RecyclingPool<CUevent_st>> events_;
  std::vector<std::unique_ptr<Stream>> streams_;
  CaptureStream capture_;
};

}  // namespace depengine::detail
