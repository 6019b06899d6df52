#include "devices/emulated/emulated_executor.h"

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
  for (const Fence& fence : op.fences()) static_cast<EmulatedEvent*>(fence.event.get())->wait();
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
