#pragma once
/// \file emulated_device.h
/// The emulated device: CUDA's stream and event semantics run by host threads,
/// so that placement, cross-stream ordering, deletion safety and copy/compute
/// overlap are tested with real concurrency on machines without a GPU.
///
/// Each emulated device has `compute_streams` compute streams and one copy
/// stream per direction (see stream_role.h). A stream is a host thread that
/// runs its operations one at a time, in launch order. An operation is
/// launched (queued on its stream) as soon as its predecessors are launched;
/// when a predecessor sits on another stream, the stream waits for that
/// predecessor's event before running it, as `cudaStreamWaitEvent` does. The
/// operation's function runs on the stream's thread and produces real results
/// in host memory. An idle device sleeps.
///
/// \code
///   #include <depengine/emulated_device.h>
///   #include <depengine/engine.h>
///
///   depengine::Engine engine;
///   depengine::add_emulated_device(engine, 0, {.compute_streams = 2});
///   const depengine::Device gpu = depengine::Device::emulated(0);
///   std::vector<float> host(1024, 1.0f), dev(1024), out(1024);
///   depengine::Var h = engine.new_var("host"), d = engine.new_var("dev");
///   engine.push([&](depengine::RunContext&) { dev = host; }, {h}, {d},
///               {.device = gpu, .property = depengine::OpProperty::CopyToDevice});
///   engine.push([&](depengine::RunContext&) { for (float& x : dev) x *= 2; }, {}, {d},
///               {.device = gpu});
///   engine.push([&](depengine::RunContext&) { out = dev; }, {d}, {h},
///               {.device = gpu, .property = depengine::OpProperty::CopyFromDevice});
///   engine.wait_to_read(h);   // out[i] == 2.0f
/// \endcode

#include <chrono>
#include <functional>
#include <string_view>

#include "depengine/device.h"
#include "depengine/stream_role.h"

namespace depengine {

class Engine;

/// One stream of an emulated device: what `RunContext::stream` points to for
/// an operation running there (`static_cast<EmulatedStream*>(ctx.stream)`).
class EmulatedStream {
 public:
  Device device() const { return device_; }
  StreamRole role() const { return role_; }
  /// The stream's index within its device (`RunContext::stream_index`).
  int index() const { return index_; }

 protected:
  EmulatedStream(Device device, StreamRole role, int index) : device_(device), role_(role), index_(index) {}
  ~EmulatedStream() = default;

 private:
  Device device_;
  StreamRole role_;
  int index_;
};

struct EmulatedDeviceOptions {
  /// Compute streams (at least 1); copy streams come in addition.
  int compute_streams = 2;
  /// Time each operation keeps its stream busy after its function returned,
  /// as a kernel or a DMA transfer would: lets tests and benchmarks model
  /// device time without burning host CPU.
  std::chrono::microseconds latency{0};
  /// Called on the launching thread as each operation is queued on a stream,
  /// before it can run (tests observe early launch through it). Must not
  /// block or call into the engine.
  std::function<void(std::string_view op_name, const EmulatedStream& stream)> on_launch;
};

/// Adds `Device::emulated(index)` to `engine`. Throws `std::invalid_argument`
/// when the engine already has that device, the index is out of range, or
/// the options are invalid. Thread-safe with respect to pushes that do not
/// use the new device yet.
void add_emulated_device(Engine& engine, int index, EmulatedDeviceOptions options = {});

}  // namespace depengine
