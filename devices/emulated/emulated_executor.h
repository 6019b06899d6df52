#pragma once
// EmulatedExecutor: the executor of one emulated device (see
// depengine/emulated_device.h). Launching an operation queues a task on the
// stream StreamSelector picks and reports the launch with a fence on a fresh
// EmulatedEvent; the task waits for the events of its predecessors, runs the
// operation (or skips it if a predecessor failed), reports the completion
// and signals its event.
//
// A replayed graph (StreamGraph) is one launch too: its nodes are placed on
// streams by the same rule, and each stream it uses gets one task that runs
// its nodes in recorded order, each after its predecessors on other streams
// (fork: the first node's task begins the replay; join: the last task to
// finish ends it and reports the completion).

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "depengine/emulated_device.h"
#include "depengine/executor.h"
#include "devices/emulated/emulated_event.h"
#include "devices/emulated/stream_thread.h"
#include "devices/streams/recycling_pool.h"
#include "devices/streams/stream_selector.h"

namespace depengine::detail {

class EmulatedExecutor final : public Executor {
 public:
  EmulatedExecutor(Device device, EmulatedDeviceOptions options);
  ~EmulatedExecutor() override;

  void submit(ReadyOp op) override;
  bool uses_fences() const override { return true; }
  void shutdown() override;

 private:
  // noexcept: only allocation can fail here, and the engine cannot undo a
  // half-made launch.
  static void launch(void* self, ReadyOp op) noexcept;
  void run(ReadyOp op, StreamThread& stream, const std::shared_ptr<EmulatedEvent>& done);
  static void report_completion(ReadyOp op, EmulatedEvent& done);
  static void wait_for_fences(const ReadyOp& op);

  struct GraphLaunch;
  void launch_graph(ReadyOp op, StreamGraph graph);
  void run_graph_part(GraphLaunch& launch, StreamThread& stream);

  const Device device_;
  const EmulatedDeviceOptions options_;
  StreamSelector selector_;
  std::shared_ptr<RecyclingPool<EmulatedEvent>> events_;
  std::vector<std::unique_ptr<StreamThread>> streams_;
};

}  // namespace depengine::detail
