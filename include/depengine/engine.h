#pragma once
/// \file engine.h
/// `Engine`: push operations that declare what they read and write; the engine
/// runs them asynchronously in an order that respects those declarations.
///
/// Rules (see docs/semantics.md for the full contract):
/// - Two operations that touch the same variable, at least one writing it,
///   take effect in push order. Readers between two writes may run together.
/// - `push` returns at once. It blocks only for back-pressure, when more than
///   `EngineOptions::max_ops_in_flight` operations are in flight, and it runs
///   ready operations itself when its thread shares a CPU worker's CPU and
///   has filled its batches (docs/semantics.md).
/// - `wait_to_read(v)` returns when every write to `v` pushed before it has
///   completed; `wait_to_write(v)` also waits for the reads; `wait_all()` for
///   everything. They rethrow the error of a failed operation that covers the
///   variable, and then the engine goes on working.
/// - An operation that throws marks the variables it writes as failed; later
///   operations that touch a failed variable are skipped and carry the error
///   on (of several failed variables, that of the first in their reads, then
///   writes), until a blocking call reports it.
///
/// Thread safety: every member may be called from any thread at once, and
/// `push`, `push_async`, `new_var` and `delete_var` also from inside running
/// operations. The blocking calls throw `std::logic_error` when called from
/// inside an operation (waiting there could deadlock the engine).
///
/// \code
///   #include <depengine/engine.h>
///
///   depengine::Engine engine;
///   int a = 0, b = 0;
///   depengine::Var va = engine.new_var("a"), vb = engine.new_var("b");
///   engine.push([&](depengine::RunContext&) { a = 20; }, {}, {va});
///   engine.push([&](depengine::RunContext&) { b = a + 22; }, {va}, {vb});
///   engine.wait_to_read(vb);   // b == 42 here
/// \endcode

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "depengine/completion.h"
#include "depengine/detail/inline_function.h"
#include "depengine/device.h"
#include "depengine/options.h"
#include "depengine/run_context.h"
#include "depengine/var.h"

namespace depengine {

class Executor;
class EngineCore;
class Graph;

/// The body of an operation. Closures up to 48 bytes are stored without allocating.
using OpFn = detail::InlineFunction<void(RunContext&)>;
/// The body of an asynchronous operation: it must arrange for `done` to be called once.
using AsyncOpFn = detail::InlineFunction<void(RunContext&, Completion done)>;
/// Runs once a deleted variable is no longer used by any operation.
using ReleaseFn = detail::InlineFunction<void()>;

class Engine {
 public:
  explicit Engine(EngineOptions options = {});
  /// Waits for every pushed operation, then stops the workers. Errors still
  /// unreported are dropped (destructors do not throw). Called from inside an
  /// operation, where it would wait forever, it prints why and aborts.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Creates a variable. The name is shown in error messages and the profiler.
  Var new_var(std::string_view name = {});

  /// Pushes an operation that reads `reads` and writes `writes`.
  /// Throws `std::invalid_argument` (and enqueues nothing) for a null `fn`, an
  /// unknown, deleted or foreign variable (also one deleted by another thread
  /// during the call), a variable listed twice or in both lists, or a device
  /// the engine does not have.
  void push(OpFn fn, VarList reads, VarList writes, const PushOptions& options = {});

  /// Like `push`, for work that completes elsewhere: `fn` starts it and the
  /// operation completes when the `Completion` it receives is called.
  void push_async(AsyncOpFn fn, VarList reads, VarList writes, const PushOptions& options = {});

  /// Deletes `var`: pushed like a write. `release`, if given, runs once every
  /// earlier operation on `var` has completed, on every device; then the
  /// variable's slot is recycled. Using `var` afterwards throws. A failure
  /// that still marks `var` then is reported by the next `wait_all`.
  void delete_var(Var var, ReleaseFn release = {});
  /// The same, for a helper variable of a composite operation (a collective's
  /// scratch chunks): a failure that still marks it is dropped, since the
  /// composite operation passed it on to the variables it writes, through
  /// which the caller sees it.
  void delete_helper_var(Var var);

  /// Runs `body` on this thread with capture on: what it pushes on this
  /// engine is recorded, not run, into the returned graph (see graph.h,
  /// which defines `Graph`, and docs/graphs.md).
  Graph capture(const std::function<void()>& body);
  /// Pushes the graph's recorded ops again, in their recorded order, at this
  /// point of this thread's pushes; returns at once.
  void replay(const Graph& graph, const PushOptions& options = {});

  void wait_to_read(Var var);
  void wait_to_write(Var var);
  void wait_all();

  /// Adds a device (an emulated device, a framework's own executor). Throws
  /// `std::invalid_argument` if the device already exists.
  void add_device(Device device, std::unique_ptr<Executor> executor);
  bool has_device(Device device) const;

  EngineKind kind() const;
  /// Number of CPU worker threads (1 for the naive engine).
  int cpu_threads() const;
  /// The name given to `new_var`.
  std::string var_name(Var var) const;

  /// For the tensor layer, the profiler and the C API.
  EngineCore& core() { return *core_; }
  const EngineCore& core() const { return *core_; }

 private:
  std::unique_ptr<EngineCore> core_;
};

}  // namespace depengine
