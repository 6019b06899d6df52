#pragma once
// EngineCore: what the threaded and the naive engine share — variables,
// validation of pushes, devices, error bookkeeping — and the hooks through
// which executors report on ready operations.

#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "depengine/engine.h"
#include "depengine/executor.h"
#include "engine/op_block.h"
#include "engine/op_observer.h"
#include "engine/stall_watch.h"
#include "engine/var_table.h"

namespace depengine {

namespace detail {
struct GraphData;
class GraphRecorder;
class GraphRun;
}  // namespace detail

class EngineCore {
 public:
  explicit EngineCore(const EngineOptions& options);
  virtual ~EngineCore();

  // The public API (Engine forwards here).
  Var new_var(std::string_view name);
  // The functions are taken by reference: a move of an InlineFunction is an
  // indirect call, and Engine already holds them by value.
  void push(OpFn&& fn, VarList reads, VarList writes, const PushOptions& options);
  void push_async(AsyncOpFn&& fn, VarList reads, VarList writes, const PushOptions& options);
  /// `drop_failure`: a failure still marking the variable is dropped, not
  /// filed for wait_all (Engine::delete_helper_var).
  void delete_var(Var var, ReleaseFn release, bool drop_failure = false);
  void wait_to_read(Var var) { wait_var(var, false); }
  void wait_to_write(Var var) { wait_var(var, true); }
  virtual void wait_all() = 0;
  void add_device(Device device, std::unique_ptr<Executor> executor);
  bool has_device(Device device) const;
  virtual int cpu_threads() const = 0;
  EngineKind kind() const { return options_.kind; }
  std::string var_name(Var var) const;
  /// The variable whose slot is `slot`, if one lives there (its deletion may
  /// have been pushed), else a null Var: how the C API checks its handles.
  Var live_var(std::uint32_t slot) const { return vars_.live_var(slot); }
  const EngineOptions& options() const { return options_; }

  // Graphs (engine/graph_capture.cpp, engine/graph_replay.cpp).
  std::shared_ptr<detail::GraphData> capture(const std::function<void()>& body);
  /// capture() in two calls, for the C API: what this thread pushes between
  /// them is recorded. Both throw std::logic_error when out of place.
  void capture_begin();
  std::shared_ptr<detail::GraphData> capture_end();
  void replay(const std::shared_ptr<detail::GraphData>& graph, const PushOptions& options);
  /// Deletes the variables the graph's body deleted (pushed: after the
  /// graph's replays in flight).
  void release_graph(detail::GraphData& graph) noexcept;

  // Hooks of ReadyOp and Completion.
  virtual void on_launched(detail::OpBlock* op) = 0;
  virtual void on_completed(detail::OpBlock* op, std::exception_ptr error) = 0;
  /// For the CPU executor: completes `op` and returns one CPU op it made
  /// ready, to run next on the same thread (inline continuation), or null.
  virtual detail::OpBlock* complete_and_continue(detail::OpBlock* op, std::exception_ptr error) {
    on_completed(op, std::move(error));
    return nullptr;
  }
  /// For the CPU executor: a worker found no ready CPU work.
  virtual void on_cpu_idle() {}
  /// For the CPU executor: a worker that found no work for a while stopped
  /// counting as active. Returns whether the engine gave it new work
  /// (pushes it had held back), in which case it looks again.
  virtual bool on_cpu_retiring() { return false; }
  /// For the CPU executor: a worker looks for work (now and then while it
  /// spins). Returns whether the engine gave it some.
  virtual bool on_cpu_spinning() { return false; }
  /// For the CPU executor: queued ops were left to the active workers, and
  /// CpuWorkers::watch_queue wants calling until it says done.
  virtual void on_cpu_watch() {}
  std::exception_ptr invoke(detail::OpBlock* op, RunContext& ctx);
  /// A replay on one stream device run by the device itself (StreamGraph):
  /// what invoke does around the function, around the nodes.
  void begin_stream_graph(detail::OpBlock* op, const RunContext& ctx);
  void run_stream_graph_node(detail::OpBlock* op, std::uint32_t node, const RunContext& ctx);
  std::exception_ptr invoke_stream_graph_node(detail::OpBlock* op, std::uint32_t node, const RunContext& ctx);
  void end_stream_graph(detail::OpBlock* op, const RunContext& ctx);
  /// Completes an async op if `ticket` is still current; a stale ticket
  /// throws std::logic_error, or is ignored when `quiet`.
  void complete_async(detail::OpBlock* op, std::uint64_t ticket, std::exception_ptr error, bool quiet = false);
  void drop_async(detail::OpBlock* op, std::uint64_t ticket);

  // Profiler.
#if !defined(DEPENGINE_PROFILER_HOOKS) || DEPENGINE_PROFILER_HOOKS
  void set_observer(detail::OpObserver* observer) { observer_.store(observer, std::memory_order_release); }
  detail::OpObserver* observer() const { return observer_.load(std::memory_order_acquire); }
#else
  // Hooks compiled out (DEPENGINE_PROFILER_HOOKS=OFF): a constant null lets
  // the compiler drop every `if (observer())` branch, to measure what they cost.
  void set_observer(detail::OpObserver*) {}
  static constexpr detail::OpObserver* observer() { return nullptr; }
#endif
  /// Keeps `object` alive until the engine is destroyed, after every
  /// operation completed: a hook that loaded the observer just before it was
  /// detached may still be running on it.
  void keep_alive(std::shared_ptr<void> object);

  /// Set while this thread runs an operation: blocking calls then throw.
  static bool in_operation();
  /// Set while this thread runs an operation of this engine (innermost).
  bool in_own_operation() const;

 protected:
  friend class ReadyOp;  // input_error, for stream devices
  friend class detail::GraphRecorder;  // vars_, for the variables a capture makes
  friend class detail::GraphRun;       // fail_var, record_unattached_failure

  /// A replayed graph's writes left the variable of the replay op's `entry`
  /// failed with `error`: as a failed write would have left it (entries
  /// granted early behind it, on a stream device, take the error too).
  /// A replay's node failed writing `var`, which the replay op holds through
  /// `entry`, or without one (adopted: null).
  void fail_var(detail::VarState& var, const detail::Entry* entry, std::exception_ptr error);
  /// Records a validated push (its block goes back to the pool).
  void record(detail::GraphRecorder* recorder, detail::OpBlock* op, OpFn&& fn, AsyncOpFn&& async_fn);
  /// delete_var, never recorded by a capture.
  void delete_var_now(Var var, ReleaseFn release, bool drop_failure = false);
  /// Pushes each node of `graph` again (graphs that do not run as a DAG, and
  /// the naive engine).
  void replay_by_pushing(const std::shared_ptr<detail::GraphData>& graph);
  /// The op a replay pushes: every variable the graph touches, in one op.
  detail::OpBlock* make_replay_op(const detail::GraphData& graph, const PushOptions& options, detail::OpKind kind,
                                  Device device);
  [[noreturn, gnu::cold, gnu::noinline]] static void throw_deleted_graph_var(const detail::VarState& var);

  /// A validated op with its entries sorted; the engine takes it over.
  virtual void submit(detail::OpBlock* op) = 0;
  /// A frontend is about to wait for ops it pushed (wait_to_read, wait_to_write):
  /// what it left for later must have a thread to run it.
  virtual void before_blocking() {}
  /// Whether a blocking call may spin while the workers progress (it has a
  /// core of its own), and their count of completed ops.
  virtual bool waits_spinning_on_progress() const { return false; }
  virtual std::uint64_t completed_ops() const { return 0; }
  /// A frontend woke from a sleep in a blocking call: the thread that woke
  /// it may have had it placed on its own CPU.
  virtual void after_blocking_sleep() {}

  detail::OpBlock* make_op(detail::OpKind kind, VarList reads, VarList writes, const PushOptions& options);
  // make_op's errors, out of line so that its common path stays short.
  [[noreturn, gnu::cold, gnu::noinline]] static void throw_unknown_device(std::string_view op_name, Device device);
  [[noreturn, gnu::cold, gnu::noinline]] void throw_bad_var(std::string_view op_name, Var var, const char* list,
                                                            std::size_t index) const;
  [[noreturn, gnu::cold, gnu::noinline]] static void throw_listed_twice(std::string_view op_name,
                                                                        const detail::VarState& var,
                                                                        bool in_both_lists);
  /// The first entry of `op` whose variable was deleted (or its deletion
  /// pushed) since make_op looked it up, or null. Asked where the push is
  /// ordered: under its variables' locks, or its buffer's lock once it holds
  /// their claims. A deletion's own entry does not count.
  static const detail::Entry* stale_entry(const detail::OpBlock& op) {
    if (op.kind == detail::OpKind::Delete) return nullptr;
    for (const detail::Entry& e : op.entries) {
      if (!detail::VarTable::is_current(*e.var, e.generation)) [[unlikely]] return &e;
    }
    return nullptr;
  }
  /// Returns `op` to the pool, enqueued nowhere, and throws
  /// std::invalid_argument naming `stale`'s variable as deleted.
  [[noreturn, gnu::cold, gnu::noinline]] void reject_stale(detail::OpBlock* op, const detail::Entry& stale);
  /// For DEPENGINE_STALL_WARNING_MS: an op pushed with push/push_async is done.
  void op_finished(const detail::OpBlock& op) {
    if (stall_watch_) [[unlikely]] stall_watch_->finished(op);
  }
  /// The engine's own one-variable ops: deletions and wait markers.
  detail::OpBlock* make_engine_op(detail::OpKind kind, detail::VarState* var, std::uint32_t generation, bool write,
                                  const char* name);
  void wait_var(Var var, bool for_write);
  /// Throws std::logic_error when called from inside an operation.
  void check_blocking_allowed(const char* call) const;

  /// Files the failure of `op` for wait_all, under each variable it writes
  /// (or under none, when it writes nothing and failed itself: a skipped op
  /// that writes nothing only passes on a failure filed already).
  void record_failure(const detail::OpBlock& op);
  /// Files an error no variable carries (e.g. of a deleted variable).
  void record_unattached_failure(std::exception_ptr error);
  /// A blocking call reported the failure of `var`: its records are freed,
  /// and wait_all no longer reports it for `var` (it still does for other
  /// variables the same failure marks).
  void forget_failures_of(const detail::VarState& var);
  /// For a variable being deleted by `op`: its unreported failure, if any,
  /// outlives it, filed under no variable (or is dropped: drops_failure).
  void file_failure_of_deleted(const detail::OpBlock& op, detail::VarState& var);
  /// The error the op's inputs carry, if any: that of the first variable in
  /// its lists (reads, then writes) that had failed at the op's turn in push
  /// order (Entry::error, set as the variables' queues grant the entries).
  static std::exception_ptr input_error(const detail::OpBlock& op) {
    // Inline: every op asks, and almost none has failed inputs.
    if (!op.input_failed.load(std::memory_order_acquire)) [[likely]] return nullptr;
    return failed_input_error(op);
  }
  static std::exception_ptr failed_input_error(const detail::OpBlock& op);
  /// For an op whose entries are in no queue (naive mode): gives each entry
  /// its variable's current error, for input_error.
  static void take_input_errors(detail::OpBlock& op);
  /// Reports and clears the failure of one variable (for wait_to_*).
  static std::exception_ptr take_error(detail::VarState& var);
  /// Reports and clears every unreported failure (for wait_all); the first.
  std::exception_ptr take_all_errors();

  Executor* executor_for(Device device) {
    if (!in_table(device)) return nullptr;
    if (Executor* e = devices_[static_cast<int>(device.kind)][device.index].load(std::memory_order_acquire)) return e;
    return create_executor(device);
  }
  /// Returns a finished op to the pool (async ops once invoke() also let go).
  void release_hold(detail::OpBlock* op);
  /// Called when a Delete op completes: the slot may be reused.
  void recycle_var(detail::VarState* var) { vars_.recycle(var); }

  EngineOptions options_;
  detail::VarTable vars_;

 private:
  struct Failure {
    detail::VarState* var;  // null: an op without writes failed
    std::uint32_t generation;
    std::exception_ptr error;
  };

  /// First use of a device kind with a registered factory (e.g. cuda:0).
  Executor* create_executor(Device device);

  std::atomic<detail::OpObserver*> observer_{nullptr};
  std::unique_ptr<detail::StallWatch> stall_watch_;  // null unless DEPENGINE_STALL_WARNING_MS

  static constexpr int kMaxDeviceIndex = 64;
  static constexpr int kDeviceKinds = 4;
  /// Whether `device` has a place in devices_ (a C caller or a cast may
  /// make any kind).
  static bool in_table(Device device) {
    return static_cast<int>(device.kind) < kDeviceKinds && device.index >= 0 && device.index < kMaxDeviceIndex;
  }
  std::array<std::array<std::atomic<Executor*>, kMaxDeviceIndex>, kDeviceKinds> devices_{};
  mutable std::mutex devices_mutex_;
  std::vector<std::unique_ptr<Executor>> owned_executors_;

  std::mutex failures_mutex_;
  std::vector<Failure> failures_;

  std::mutex kept_alive_mutex_;
  std::vector<std::shared_ptr<void>> kept_alive_;

 protected:
  /// Stops device executors; the subclass calls it once everything completed.
  void shutdown_devices();
};

/// Reads DEPENGINE_ENGINE, DEPENGINE_CPU_THREADS and DEPENGINE_BATCH_PUSHES
/// into `options`; throws std::invalid_argument for unparseable values.
EngineOptions apply_environment(EngineOptions options);

std::unique_ptr<EngineCore> make_threaded_engine(const EngineOptions& options);
std::unique_ptr<EngineCore> make_naive_engine(const EngineOptions& options);

}  // namespace depengine
