#pragma once
/// \file executor.h
/// The interface between the engine and a device. Implement `Executor` to add
/// a device kind; the engine core knows devices only through it.
///
/// The engine calls `submit` once per operation, when every dependency of the
/// operation is satisfied. The executor runs the operation (`ReadyOp::invoke`)
/// where and when it likes, and reports `ReadyOp::complete` exactly once.
/// Stream devices (CUDA, emulated) may report `ReadyOp::launched` first: the
/// work is enqueued on a stream and a fence marks its end; the engine may then
/// submit same-device successors early, with that fence in `fences()`, so they
/// are launched in dependency order rather than completed in it.
///
/// \code
///   // A device that runs each operation on a thread pool the framework owns.
///   class PoolExecutor : public depengine::Executor {
///    public:
///     explicit PoolExecutor(MyPool& pool) : pool_(pool) {}
///     void submit(depengine::ReadyOp op) override {
///       pool_.post([op]() mutable {
///         depengine::RunContext ctx{.device = op.device(), .name = op.name()};
///         op.run_and_complete(ctx);
///       });
///     }
///    private:
///     MyPool& pool_;
///   };
///   engine.add_device(depengine::Device::custom(0), std::make_unique<PoolExecutor>(pool));
/// \endcode

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "depengine/device.h"
#include "depengine/options.h"
#include "depengine/run_context.h"

namespace depengine {

namespace detail {
struct OpBlock;
}

class StreamGraph;

/// Marks the end of work enqueued on one stream of a stream device. The
/// engine copies fences around without looking inside; `event` keeps the
/// device's event alive (and out of its pool) while any copy exists.
struct Fence {
  Device device;
  int stream_index = -1;
  std::shared_ptr<void> event;
};

/// A ready operation, handed to `Executor::submit`. A small copyable handle;
/// all copies refer to the same operation.
class ReadyOp {
 public:
  Device device() const;
  OpProperty property() const;
  int priority() const;
  std::string_view name() const;
  /// True for `push_async` operations: they complete through their own
  /// `Completion`, so the executor must not call `complete` for them.
  bool is_async() const;
  /// Fences of predecessors that were only launched, not completed, on this
  /// same device: wait for them (e.g. `cudaStreamWaitEvent`) before the work.
  std::span<const Fence> fences() const;

  /// Stream devices: the error of a failed variable this operation touches
  /// (of several, the first in its reads, then writes), as it stood at the
  /// operation's turn in push order, even if a blocking call has reported it
  /// since. The engine skips failed operations itself, except those with
  /// fences: their predecessors may still be running, so the device asks once
  /// it knows they completed (or, at the latest, at launch), and if non-null
  /// skips the function and `complete`s the operation with this error.
  std::exception_ptr input_error() const;
  /// Runs the operation's function on this thread. Returns what it threw.
  /// For an async operation, starts it and returns null.
  std::exception_ptr invoke(RunContext& ctx) const;
  /// Stream devices: the work is enqueued and `fence` marks its end.
  void launched(Fence fence) const;
  /// Reports the end of the operation; exactly once for non-async operations.
  void complete(std::exception_ptr error = nullptr) const;
  /// `invoke` then `complete` (or only `invoke` for async operations): what a
  /// device that runs operations on host threads does.
  void run_and_complete(RunContext& ctx) const;
  /// The replay of a captured graph whose operations all sit on this device
  /// (see StreamGraph); empty for every other operation.
  StreamGraph stream_graph() const;

  explicit ReadyOp(detail::OpBlock* op) : op_(op) {}
  detail::OpBlock* block() const { return op_; }

 private:
  detail::OpBlock* op_;
};

/// One replay of a captured graph (graph.h) whose operations are all plain
/// pushes on one stream device, handed to that device as a single operation.
/// `invoke` runs the nodes in recorded order on one stream; a device that
/// keeps the graph's multi-stream structure runs them itself instead:
///
///   begin(ctx)                  once, after the op's fences, before any node
///   run(node, ctx)              each node once, after all its predecessors,
///                               on the stream the device picks for it
///   end(ctx)                    once, after every node, before `complete()`
///
/// Nodes whose predecessors have all run may run at once on several streams.
/// A node whose inputs failed is skipped by `run` and passes the failure on;
/// the nodes' failures reach the variables at `end`, so the op itself
/// completes without an error.
///
/// A device that records the nodes' work once and launches the record at
/// later replays (CUDA graphs) calls `invoke` to record a node, keeps the
/// record in `device_state`, and runs the nodes through `run` instead
/// whenever `failed` says that a replay's inputs failed.
class StreamGraph {
 public:
  StreamGraph() = default;
  explicit operator bool() const { return op_ != nullptr; }
  /// Nodes, in recorded order (an order their dependencies allow).
  std::uint32_t size() const;
  OpProperty property(std::uint32_t node) const;
  int priority(std::uint32_t node) const;
  /// Earlier nodes this one must run after.
  std::span<const std::uint32_t> predecessors(std::uint32_t node) const;
  void begin(const RunContext& ctx) const;
  void run(std::uint32_t node, const RunContext& ctx) const;
  void end(const RunContext& ctx) const;
  /// After `begin`: whether an input of this replay failed, or a node run
  /// so far failed.
  bool failed() const;
  /// Runs the node's function with `ctx` whatever its inputs' state and
  /// records nothing; returns what it threw.
  std::exception_ptr invoke(std::uint32_t node, const RunContext& ctx) const;
  /// What the device keeps with the graph between replays: empty at first,
  /// released with the graph. The replays of one graph never overlap.
  std::shared_ptr<void>& device_state() const;

  explicit StreamGraph(detail::OpBlock* op) : op_(op) {}

 private:
  detail::OpBlock* op_ = nullptr;
};

class Executor {
 public:
  virtual ~Executor() = default;
  /// Called when `op` is ready, from any thread (a frontend thread inside
  /// `push`, a worker, a completion thread). Must not block on computation.
  virtual void submit(ReadyOp op) = 0;
  /// True if this device reports `ReadyOp::launched` and honours `fences()`.
  virtual bool uses_fences() const { return false; }
  /// Called once by the engine's destructor after every operation completed;
  /// stop threads here. Must not submit anything.
  virtual void shutdown() {}
};

/// Creates the executor of `device` on first use. Registered once per kind
/// (see `register_device_factory`); returns null when the device does not
/// exist (no such GPU).
using DeviceFactory = std::function<std::unique_ptr<Executor>(Device device)>;

/// Registers how the engine creates devices of `kind` that were not added with
/// `Engine::add_device`. Later registrations replace earlier ones.
void register_device_factory(DeviceKind kind, DeviceFactory factory);

}  // namespace depengine
