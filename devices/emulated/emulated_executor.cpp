#include "devices/emulated/emulated_executor.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "depengine/engine.h"
#include "devices/streams/launch_trampoline.h"

namespace depengine {
namespace detail {
namespace {

StreamLayout layout_of(const EmulatedDeviceOptions& options) {
  if (options.compute_streams < 1) {
    throw std::invalid_argument("depengine: an emulated device needs at least one compute stream, not " +
                                std::to_string(options.compute_streams));
  }
  if (options.latency.count() < 0) throw std::invalid_argument("depengine: negative emulated device latency");
  return {.compute = options.compute_streams};
}

StreamRole role_of_stream(const StreamLayout& layout, int index) {
  if (index < layout.compute + layout.high_priority) return StreamRole::compute;
  return static_cast<StreamRole>(index - layout.compute - layout.high_priority + 1);
}

}  // namespace

EmulatedExecutor::EmulatedExecutor(Device device, EmulatedDeviceOptions options)
    : device_(device),
      options_(std::move(options)),
      selector_(layout_of(options_)),
      events_(RecyclingPool<EmulatedEvent>::make([] { return new EmulatedEvent; },
                                                 [](EmulatedEvent* e) { e->reset(); },
                                                 [](EmulatedEvent* e) { delete e; })) {
  const StreamLayout& layout = selector_.layout();
  streams_.reserve(layout.total());
  for (int i = 0; i < layout.total(); ++i) {
    streams_.push_back(std::make_unique<StreamThread>(device, role_of_stream(layout, i), i));
  }
}

EmulatedExecutor::~EmulatedExecutor() { shutdown(); }

void EmulatedExecutor::shutdown() {
  for (auto& stream : streams_) stream->stop();
}

void EmulatedExecutor::submit(ReadyOp op) { LaunchTrampoline::run(this, &EmulatedExecutor::launch, op); }

void EmulatedExecutor::launch(void* self_ptr, ReadyOp op) noexcept {
  auto* self = static_cast<EmulatedExecutor*>(self_ptr);
  if (const StreamGraph graph = op.stream_graph()) return self->launch_graph(op, graph);
  StreamThread& stream = *self->streams_[self->selector_.choose(op)];
  if (self->options_.on_launch) self->options_.on_launch(op.name(), stream);
  // Async operations complete through their own Completion: nothing may be
  // launched behind them before that, so they get no event.
  std::shared_ptr<EmulatedEvent> done = op.is_async() ? nullptr : self->events_->acquire();
  stream.enqueue([self, op, &stream, done] { self->run(op, stream, done); });
  if (!done) return;
  op.launched(Fence{self->device_, stream.index(), done});
  if (done->launch_reported()) report_completion(op, *done);
}

void EmulatedExecutor::run(ReadyOp op, StreamThread& stream, const std::shared_ptr<EmulatedEvent>& done) {
  // A fence from this same stream is already signalled (the stream runs in
  // order), so waiting on it costs nothing; one from another stream blocks
  // this stream until that predecessor completed, like cudaStreamWaitEvent.
  wait_for_fences(op);
  // A predecessor failed after this op was launched: skip it. An async op
  // still runs: only its Completion may complete it, and the engine checks
  // its inputs again then.
  std::exception_ptr error = op.fences().empty() ? nullptr : op.input_error();
  if (!error || op.is_async()) {
    RunContext ctx{.device = device_,
                   .stream = static_cast<EmulatedStream*>(&stream),
                   .stream_index = stream.index(),
                   .property = op.property(),
                   .name = op.name()};
    error = op.invoke(ctx);
    if (options_.latency.count() > 0) std::this_thread::sleep_for(options_.latency);
  }
  if (done && done->work_done(std::move(error))) report_completion(op, *done);
}

// One replay of a stream graph in flight: where each node runs, and which
// have run (a node waits for its predecessors on other streams, as a stream
// waits for their events).
struct EmulatedExecutor::GraphLaunch {
  GraphLaunch(ReadyOp op, StreamGraph graph) : op(op), graph(graph) {}

  ReadyOp op;
  StreamGraph graph;
  std::shared_ptr<EmulatedEvent> done;
  std::vector<int> stream_of;                        // per node
  std::vector<std::vector<std::uint32_t>> nodes_on;  // per stream: its nodes, in recorded order
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<char> ran;  // per node
  bool begun = false;
  int parts = 0;  // streams with nodes
  int parts_left = 0;
};

void EmulatedExecutor::launch_graph(ReadyOp op, StreamGraph graph) {
  auto launch = std::make_shared<GraphLaunch>(op, graph);
  std::shared_ptr<EmulatedEvent> done = events_->acquire();
  launch->done = done;
  launch->stream_of = selector_.choose(op, graph);
  launch->nodes_on.resize(streams_.size());
  for (std::uint32_t n = 0; n < graph.size(); ++n) launch->nodes_on[launch->stream_of[n]].push_back(n);
  launch->ran.assign(graph.size(), 0);
  for (const auto& nodes : launch->nodes_on) launch->parts += nodes.empty() ? 0 : 1;
  launch->parts_left = launch->parts;
  const int first = launch->stream_of[0];
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    // The first node's stream first: its part begins the replay.
    StreamThread& stream = *streams_[(static_cast<std::size_t>(first) + i) % streams_.size()];
    if (launch->nodes_on[stream.index()].empty()) continue;
    if (options_.on_launch) options_.on_launch(op.name(), stream);
    stream.enqueue([this, launch, &stream] { run_graph_part(*launch, stream); });
  }
  op.launched(Fence{device_, first, done});
  if (done->launch_reported()) report_completion(op, *done);
}

void EmulatedExecutor::run_graph_part(GraphLaunch& launch, StreamThread& stream) {
  const RunContext ctx{.device = device_,
                       .stream = static_cast<EmulatedStream*>(&stream),
                       .stream_index = stream.index(),
                       .name = launch.op.name()};
  const std::vector<std::uint32_t>& nodes = launch.nodes_on[stream.index()];
  if (nodes.front() == 0) {
    wait_for_fences(launch.op);
    launch.graph.begin(ctx);
    {
      std::lock_guard lock(launch.mutex);
      launch.begun = true;
    }
    launch.changed.notify_all();
  }
  const auto has_run = [&](std::uint32_t node) {
    std::span<const std::uint32_t> before = launch.graph.predecessors(node);
    return launch.begun && std::all_of(before.begin(), before.end(), [&](std::uint32_t p) {
             return launch.stream_of[p] == stream.index() || launch.ran[p];
           });
  };
  for (const std::uint32_t node : nodes) {
    {
      std::unique_lock lock(launch.mutex);
      launch.changed.wait(lock, [&] { return has_run(node); });
    }
    launch.graph.run(node, ctx);
    if (options_.latency.count() > 0) std::this_thread::sleep_for(options_.latency);
    if (launch.parts > 1) {
      {
        std::lock_guard lock(launch.mutex);
        launch.ran[node] = 1;
      }
      launch.changed.notify_all();
    }
  }
  {
    std::lock_guard lock(launch.mutex);
    if (--launch.parts_left != 0) return;
  }
  launch.graph.end(ctx);
  if (launch.done->work_done(nullptr)) report_completion(launch.op, *launch.done);
}

void EmulatedExecutor::wait_for_fences(const ReadyOp& op) {
  for (const Fence& fence : op.fences()) static_cast<EmulatedEvent*>(fence.event.get())->wait();
}

void EmulatedExecutor::report_completion(ReadyOp op, EmulatedEvent& done) {
  op.complete(done.take_error());
  done.signal();
}

}  // namespace detail

void add_emulated_device(Engine& engine, int index, EmulatedDeviceOptions options) {
  const Device device = Device::emulated(index);
  if (engine.has_device(device)) {
    throw std::invalid_argument("depengine: device " + device.to_string() + " already exists");
  }
  engine.add_device(device, std::make_unique<detail::EmulatedExecutor>(device, std::move(options)));
}

}  // namespace depengine
