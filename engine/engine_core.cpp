#include "engine/engine_core.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <stdexcept>

#include "engine/device_factory.h"
#include "engine/graph_capture.h"
#include "engine/graph_data.h"
#include "engine/op_pool.h"
#include "sync/environment.h"
#include "sync/wait_signal.h"

namespace depengine {

using detail::Entry;
using detail::OpBlock;
using detail::OpKind;
using detail::VarState;

namespace {

std::atomic<std::uint32_t> g_next_engine_id{1};
thread_local int t_operation_depth = 0;
// The engine whose operation this thread runs (the innermost one).
thread_local const EngineCore* t_operation_engine = nullptr;

// One variable of an op being made, as make_op sorts them.
struct Access {
  VarState* var;
  std::uint32_t position;
  std::uint32_t generation;
  bool write;
};
// Lists up to this long are sorted on the stack; longer ones (a join of
// many inputs) in a vector of the thread's, which keeps its capacity.
constexpr std::size_t kInlineAccesses = 16;
thread_local std::vector<Access> t_many_accesses;

// An async op's Completion called on the thread that runs its function,
// before that returns: the op completes once it has returned, so that an
// exception thrown after the call still fails it.
struct InlineCompletion {
  explicit InlineCompletion(const OpBlock* op) : op(op), outer(t_current) { t_current = this; }
  ~InlineCompletion() { t_current = outer; }
  const OpBlock* op;
  InlineCompletion* outer;
  bool called = false;
  std::exception_ptr error;
  static inline thread_local InlineCompletion* t_current = nullptr;
};

struct OperationScope {
  explicit OperationScope(const EngineCore* engine) : outer(t_operation_engine) {
    ++t_operation_depth;
    t_operation_engine = engine;
  }
  ~OperationScope() {
    --t_operation_depth;
    t_operation_engine = outer;
  }
  const EngineCore* outer;
};

std::string describe(std::string_view name) {
  return name.empty() ? std::string("an operation") : "operation '" + std::string(name) + "'";
}

std::string var_label(const VarState& var) {
  return var.name.empty() ? "#" + std::to_string(var.slot) : "'" + var.name + "'";
}

}  // namespace

EngineCore::EngineCore(const EngineOptions& options)
    : options_(options),
      vars_(g_next_engine_id.fetch_add(1, std::memory_order_relaxed)),
      stall_watch_(options.read_environment ? detail::StallWatch::from_environment() : nullptr) {}

EngineCore::~EngineCore() = default;

bool EngineCore::in_operation() { return t_operation_depth > 0; }

bool EngineCore::in_own_operation() const { return t_operation_engine == this; }

Var EngineCore::new_var(std::string_view name) {
  Var var = vars_.create(name);
  if (detail::GraphRecorder* recorder = detail::GraphRecorder::active_for(this)) [[unlikely]] {
    try {
      recorder->created(var, vars_.find(var));
    } catch (...) {
      delete_var_now(var, {});
      throw;
    }
  }
  return var;
}

std::string EngineCore::var_name(Var var) const {
  VarState* state = vars_.find_including_deleted(var);
  if (state == nullptr) throw std::invalid_argument("depengine: var_name of an unknown or deleted variable");
  return state->name;
}

void EngineCore::keep_alive(std::shared_ptr<void> object) {
  std::lock_guard lock(kept_alive_mutex_);
  kept_alive_.push_back(std::move(object));
}

// ---------------------------------------------------------------- devices

void EngineCore::add_device(Device device, std::unique_ptr<Executor> executor) {
  if (!executor) throw std::invalid_argument("depengine: add_device with a null executor");
  if (!in_table(device)) {
    throw std::invalid_argument("depengine: no such device kind or index: " + device.to_string());
  }
  std::lock_guard lock(devices_mutex_);
  auto& slot = devices_[static_cast<int>(device.kind)][device.index];
  if (slot.load(std::memory_order_relaxed) != nullptr) {
    throw std::invalid_argument("depengine: device " + device.to_string() + " already exists");
  }
  slot.store(executor.get(), std::memory_order_release);
  owned_executors_.push_back(std::move(executor));
}

bool EngineCore::has_device(Device device) const {
  if (!in_table(device)) return false;
  return devices_[static_cast<int>(device.kind)][device.index].load(std::memory_order_acquire) != nullptr;
}

Executor* EngineCore::create_executor(Device device) {
  auto& slot = devices_[static_cast<int>(device.kind)][device.index];
  std::lock_guard lock(devices_mutex_);
  if (Executor* e = slot.load(std::memory_order_relaxed)) return e;
  std::unique_ptr<Executor> created = detail::create_device(device);
  if (!created) return nullptr;
  slot.store(created.get(), std::memory_order_release);
  owned_executors_.push_back(std::move(created));
  return slot.load(std::memory_order_relaxed);
}

void EngineCore::shutdown_devices() {
  std::lock_guard lock(devices_mutex_);
  // Reverse creation order: the CPU device, created first, stops last.
  for (auto it = owned_executors_.rbegin(); it != owned_executors_.rend(); ++it) (*it)->shutdown();
}

// ---------------------------------------------------------------- pushing

OpBlock* EngineCore::make_op(OpKind kind, VarList reads, VarList writes, const PushOptions& options) {
  // Field by field, as the caller most likely just stored them: a load
  // spanning two stores cannot take its value from them and waits until
  // every earlier store of this thread has reached the cache, misses on
  // lines the workers hold included (kept as two scalars: a Device spilled
  // to this frame would be reloaded whole, with the same effect).
  const DeviceKind device_kind = options.device.kind;
  const int device_index = options.device.index;
  Executor* executor = nullptr;
  if (kind == OpKind::Sync || kind == OpKind::Async) {
    executor = executor_for(Device{device_kind, device_index});
    if (executor == nullptr) [[unlikely]] throw_unknown_device(options.name, Device{device_kind, device_index});
  }

  auto find = [&](Var v, const char* list, std::size_t index) {
    VarState* state = vars_.find(v);
    if (state == nullptr) [[unlikely]] throw_bad_var(options.name, v, list, index);
    return state;
  };
  // Validated before a block is taken, so that an error leaves nothing to
  // undo. Several variables are sorted (the lock order) in `accesses`, on
  // this thread's stack, and then written to the entries once, in order:
  // sorting the entries themselves would read back lines whose stores still
  // wait in the store buffer for the entries' storage to come from the
  // worker that ran their previous op, and a load that no single store can
  // forward waits for all of them to drain.
  const std::size_t count = reads.size() + writes.size();
  Access inline_accesses[kInlineAccesses];
  Access* accesses = inline_accesses;
  if (count == 1) {
    const bool write = writes.size() == 1;
    const Var v = write ? writes[0] : reads[0];
    accesses[0] = {find(v, write ? "writes" : "reads", 0), 0, v.generation(), write};
  } else {
    if (count > kInlineAccesses) [[unlikely]] {
      t_many_accesses.resize(count);
      accesses = t_many_accesses.data();
    }
    for (std::size_t i = 0; i < reads.size(); ++i) {
      accesses[i] = {find(reads[i], "reads", i), static_cast<std::uint32_t>(i), reads[i].generation(), false};
    }
    for (std::size_t i = 0; i < writes.size(); ++i) {
      const std::size_t position = reads.size() + i;
      accesses[position] = {find(writes[i], "writes", i), static_cast<std::uint32_t>(position),
                            writes[i].generation(), true};
    }
    // By position among equals: a variable listed twice is reported by its
    // first two listings.
    std::sort(accesses, accesses + count, [](const Access& a, const Access& b) {
      return a.var != b.var ? a.var < b.var : a.position < b.position;
    });
    for (std::size_t i = 1; i < count; ++i) {
      const Access& a = accesses[i - 1];
      if (a.var == accesses[i].var) [[unlikely]] throw_listed_twice(options.name, *a.var, a.write != accesses[i].write);
    }
  }

  OpBlock* op = detail::OpPool::acquire();
  std::vector<Entry>& entries = op->entries;
  try {
    entries.reserve(count);
  } catch (...) {
    detail::OpPool::release(op);
    throw;
  }
  for (std::size_t i = 0; i < count; ++i) {
    const Access& a = accesses[i];
    entries.emplace_back().place(a.var, op, a.write, a.position, a.generation);
  }
  op->engine = this;
  op->kind = kind;
  op->priority = options.priority;
  op->bytes = static_cast<std::uint32_t>(std::min<std::size_t>(options.bytes, UINT32_MAX));
  op->device = Device{device_kind, device_index};
  op->property = options.property;
  if (!options.name.empty()) {
    op->name.assign(options.name);
    op->named = true;
  }
  op->executor = executor;
  op->device_uses_fences = executor != nullptr && executor->uses_fences();
  if (op->device_uses_fences) op->entry_fences.resize(entries.size());
  return op;
}

void EngineCore::throw_unknown_device(std::string_view op_name, Device device) {
  throw std::invalid_argument("depengine: " + describe(op_name) + " placed on " + device.to_string() +
                              ", which this engine does not have");
}

void EngineCore::throw_bad_var(std::string_view op_name, Var var, const char* list, std::size_t index) const {
  const char* why = var.is_null()                          ? "is a null Var"
                    : var.engine_id() != vars_.engine_id() ? "belongs to another engine"
                                                           : "was deleted";
  throw std::invalid_argument("depengine: " + describe(op_name) + ": variable " + std::to_string(index) +
                              " of its " + list + " " + why);
}

void EngineCore::reject_stale(OpBlock* op, const Entry& stale) {
  std::string message;
  if (op->kind == OpKind::Wait) {
    message = "depengine: " + std::string(op->name_view()) + " of a deleted variable";
  } else {
    const bool write = stale.write;
    std::size_t index = 0;
    for (const Entry& e : op->entries) index += e.write == write && e.position < stale.position;
    message = "depengine: " + describe(op->name_view()) + ": variable " + std::to_string(index) + " of its " +
              (write ? "writes" : "reads") + " was deleted";
  }
  op_finished(*op);
  detail::OpPool::release(op);
  throw std::invalid_argument(message);
}

void EngineCore::throw_listed_twice(std::string_view op_name, const VarState& var, bool in_both_lists) {
  const char* where = in_both_lists ? "in both its reads and its writes" : "twice";
  throw std::invalid_argument("depengine: " + describe(op_name) + " lists variable " + var_label(var) + " " + where);
}

void EngineCore::push(OpFn&& fn, VarList reads, VarList writes, const PushOptions& options) {
  if (!fn) throw std::invalid_argument("depengine: push of " + describe(options.name) + " with a null function");
  OpBlock* op = make_op(OpKind::Sync, reads, writes, options);
  if (detail::GraphRecorder* recorder = detail::GraphRecorder::active_for(this)) [[unlikely]] {
    return record(recorder, op, std::move(fn), {});
  }
  op->fn = std::move(fn);
  if (stall_watch_) [[unlikely]] stall_watch_->pushed(*op);
  submit(op);
}

void EngineCore::push_async(AsyncOpFn&& fn, VarList reads, VarList writes, const PushOptions& options) {
  if (!fn) throw std::invalid_argument("depengine: push_async of " + describe(options.name) + " with a null function");
  OpBlock* op = make_op(OpKind::Async, reads, writes, options);
  if (detail::GraphRecorder* recorder = detail::GraphRecorder::active_for(this)) [[unlikely]] {
    return record(recorder, op, {}, std::move(fn));
  }
  op->async_fn = std::move(fn);
  op->ticket.fetch_add(1, std::memory_order_relaxed);  // arm: odd
  op->holds.store(2, std::memory_order_relaxed);
  if (stall_watch_) [[unlikely]] stall_watch_->pushed(*op);
  submit(op);
}

void EngineCore::record(detail::GraphRecorder* recorder, OpBlock* op, OpFn&& fn, AsyncOpFn&& async_fn) {
  try {
    recorder->record(*op, std::move(fn), std::move(async_fn));
  } catch (...) {
    detail::OpPool::release(op);
    throw;
  }
  detail::OpPool::release(op);
}

void EngineCore::delete_var(Var var, ReleaseFn release, bool drop_failure) {
  if (detail::GraphRecorder* recorder = detail::GraphRecorder::active_for(this)) [[unlikely]] {
    return recorder->deleted(var, std::move(release), drop_failure);
  }
  delete_var_now(var, std::move(release), drop_failure);
}

void EngineCore::delete_var_now(Var var, ReleaseFn release, bool drop_failure) {
  VarState* state = vars_.find(var);
  if (state == nullptr) {
    throw std::invalid_argument(var.is_null() ? "depengine: delete_var of a null Var"
                                : var.engine_id() != vars_.engine_id()
                                    ? "depengine: delete_var of a variable of another engine"
                                    : "depengine: delete_var of a variable already deleted");
  }
  // Only one of several concurrent deletes may win. Sequentially consistent:
  // a push that looked the variable up before this store, and then takes its
  // claim, either sees it or has its claim seen by this delete's registration
  // (VarTable::is_current).
  if (state->delete_pushed.exchange(true, std::memory_order_seq_cst)) {
    throw std::invalid_argument("depengine: delete_var of a variable already deleted");
  }
  OpBlock* op = make_engine_op(OpKind::Delete, state, var.generation(), /*write=*/true, "delete_var");
  op->release = std::move(release);
  op->drops_failure = drop_failure;
  submit(op);
}

OpBlock* EngineCore::make_engine_op(OpKind kind, VarState* var, std::uint32_t generation, bool write,
                                    const char* name) {
  OpBlock* op = detail::OpPool::acquire();
  op->entries.emplace_back().place(var, op, write, /*at_position=*/0, generation);
  op->engine = this;
  op->kind = kind;
  op->name = name;
  op->named = true;
  op->priority = 0;
  op->bytes = 0;
  op->device = Device::cpu();
  op->property = OpProperty::Normal;
  return op;
}

// ---------------------------------------------------------------- blocking

void EngineCore::check_blocking_allowed(const char* call) const {
  if (detail::GraphRecorder::capturing()) {
    throw std::logic_error(std::string("depengine: ") + call +
                           " called inside a capture; the body's pushes have not run, so it would wait forever");
  }
  if (in_operation()) {
    throw std::logic_error(std::string("depengine: ") + call +
                           " called from inside an operation; this would deadlock the engine");
  }
}

void EngineCore::wait_var(Var var, bool for_write) {
  const char* call = for_write ? "wait_to_write" : "wait_to_read";
  check_blocking_allowed(call);
  VarState* state = vars_.find(var);
  if (state == nullptr) {
    throw std::invalid_argument(std::string("depengine: ") + call + " of a " +
                                (var.is_null() ? "null" : "deleted or unknown") + " variable");
  }
  detail::OpObserver* obs = observer();
  if (obs) [[unlikely]] obs->on_block_begin(call);
  detail::WaitSignal signal;
  OpBlock* op = make_engine_op(OpKind::Wait, state, var.generation(), for_write, call);
  op->signal = &signal;
  submit(op);
  if (!signal.is_set()) before_blocking();
  std::exception_ptr error = waits_spinning_on_progress()
                                 ? signal.wait_while_progressing([this] { return completed_ops(); })
                                 : signal.wait();
  if (signal.slept()) after_blocking_sleep();
  if (obs) [[unlikely]] obs->on_block_end(call);
  if (error) std::rethrow_exception(error);
}

// ---------------------------------------------------------------- running

std::exception_ptr EngineCore::invoke(OpBlock* op, RunContext& ctx) {
  detail::OpObserver* obs = observer();
  if (obs) [[unlikely]] obs->on_start(*op, ctx);
  std::exception_ptr error;
  {
    OperationScope scope(this);
    if (op->kind == OpKind::Sync) {
      try {
        op->fn(ctx);
      } catch (...) {
        error = std::current_exception();
      }
    } else {
      const std::uint64_t ticket = op->ticket.load(std::memory_order_relaxed);
      op->async_state.store(detail::kAsyncInvoking, std::memory_order_relaxed);
      bool threw = false;
      InlineCompletion inline_completion(op);
      try {
        op->async_fn(ctx, Completion(op, ticket));
      } catch (...) {
        error = std::current_exception();
        threw = true;
      }
      const auto state = op->async_state.exchange(0, std::memory_order_acq_rel);
      if (inline_completion.called) {
        // A throw after the Completion was called still fails the op.
        on_completed(op, threw ? error : std::move(inline_completion.error));
      } else if (threw) {
        complete_async(op, ticket, error, /*quiet=*/true);
      } else if (state & detail::kAsyncDropped) {
        complete_async(op, ticket, detail::dropped_completion_error(*op), /*quiet=*/true);
      }
      error = nullptr;  // reported through the completion
    }
  }
  if (obs) [[unlikely]] obs->on_end(*op, ctx);
  if (op->kind == OpKind::Async) release_hold(op);
  return error;
}

void EngineCore::begin_stream_graph(OpBlock* op, const RunContext& ctx) {
  if (detail::OpObserver* obs = observer()) [[unlikely]] obs->on_start(*op, ctx);
  op->stream_graph->run.begin_on_streams(*op);
}

void EngineCore::run_stream_graph_node(OpBlock* op, std::uint32_t node, const RunContext& ctx) {
  OperationScope scope(this);
  op->stream_graph->run.run_on_stream(node, ctx);
}

std::exception_ptr EngineCore::invoke_stream_graph_node(OpBlock* op, std::uint32_t node, const RunContext& ctx) {
  OperationScope scope(this);
  return op->stream_graph->run.invoke_node(node, ctx);
}

void EngineCore::end_stream_graph(OpBlock* op, const RunContext& ctx) {
  op->stream_graph->run.end_on_streams();
  if (detail::OpObserver* obs = observer()) [[unlikely]] obs->on_end(*op, ctx);
}

void EngineCore::release_hold(OpBlock* op) {
  if (op->kind != OpKind::Async || op->holds.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    detail::OpPool::release(op);
  }
}

void EngineCore::complete_async(OpBlock* op, std::uint64_t ticket, std::exception_ptr error, bool quiet) {
  std::uint64_t expected = ticket;
  if (!op->ticket.compare_exchange_strong(expected, ticket + 1, std::memory_order_acq_rel)) {
    if (quiet) return;
    throw std::logic_error("depengine: the completion of an asynchronous operation was called twice");
  }
  // (Not once invoke() is past the function: its own completions go through.)
  if (InlineCompletion* pending = InlineCompletion::t_current;
      pending != nullptr && pending->op == op &&
      (op->async_state.load(std::memory_order_relaxed) & detail::kAsyncInvoking)) {
    pending->called = true;
    pending->error = std::move(error);
    return;
  }
  on_completed(op, std::move(error));
}

void EngineCore::drop_async(OpBlock* op, std::uint64_t ticket) {
  const auto state = op->async_state.fetch_or(detail::kAsyncDropped, std::memory_order_acq_rel);
  if (state & detail::kAsyncInvoking) return;  // invoke() completes it
  complete_async(op, ticket, detail::dropped_completion_error(*op), /*quiet=*/true);
}

// ---------------------------------------------------------------- errors

std::exception_ptr EngineCore::failed_input_error(const OpBlock& op) {
  std::exception_ptr error;
  std::uint32_t position = 0;
  for (const Entry& e : op.entries) {
    std::lock_guard lock(e.var->lock);
    if (e.error && (!error || e.position < position)) {
      error = e.error;
      position = e.position;
    }
  }
  return error;
}

void EngineCore::take_input_errors(OpBlock& op) {
  for (Entry& e : op.entries) {
    if (!e.var->failed.load(std::memory_order_acquire)) continue;
    std::lock_guard lock(e.var->lock);
    if (e.var->error) detail::set_input_error(e, e.var->error);
  }
}

std::exception_ptr EngineCore::take_error(VarState& var) {
  if (!var.failed.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard lock(var.lock);
  std::exception_ptr error = std::move(var.error);
  var.error = nullptr;
  var.failed.store(false, std::memory_order_release);
  return error;
}

void EngineCore::record_unattached_failure(std::exception_ptr error) {
  std::lock_guard lock(failures_mutex_);
  failures_.push_back({nullptr, 0, std::move(error)});
}

void EngineCore::record_failure(const OpBlock& op) {
  std::lock_guard lock(failures_mutex_);
  bool wrote = false;
  for (const Entry& e : op.entries) {
    if (!e.write) continue;
    wrote = true;
    failures_.push_back({e.var, e.var->generation.load(std::memory_order_relaxed), op.error});
  }
  const bool skipped = std::any_of(op.entries.begin(), op.entries.end(),
                                   [&](const Entry& e) { return e.error == op.error; });
  if (!wrote && !skipped) failures_.push_back({nullptr, 0, op.error});
}

void EngineCore::forget_failures_of(const VarState& var) {
  // Older records of the variable are stale: it held one failure at a time.
  std::lock_guard lock(failures_mutex_);
  std::erase_if(failures_, [&](const Failure& f) { return f.var == &var; });
}

void EngineCore::file_failure_of_deleted(const OpBlock& op, VarState& var) {
  std::exception_ptr unreported = take_error(var);
  if (!unreported) return;
  forget_failures_of(var);
  if (!op.drops_failure) record_unattached_failure(std::move(unreported));
}

std::exception_ptr EngineCore::take_all_errors() {
  std::vector<Failure> failures;
  {
    std::lock_guard lock(failures_mutex_);
    failures.swap(failures_);
  }
  std::exception_ptr first;
  for (Failure& f : failures) {
    if (f.var == nullptr) {
      if (!first) first = f.error;
      continue;
    }
    // Only failures no blocking call has reported yet (the variable still
    // holds this very error) count.
    std::lock_guard lock(f.var->lock);
    if (f.var->generation.load(std::memory_order_relaxed) != f.generation || f.var->error != f.error) continue;
    f.var->error = nullptr;
    f.var->failed.store(false, std::memory_order_release);
    if (!first) first = f.error;
  }
  return first;
}

// ---------------------------------------------------------------- environment

EngineOptions apply_environment(EngineOptions options) {
  if (!options.read_environment) return options;
  if (const char* kind = std::getenv("DEPENGINE_ENGINE"); kind && *kind) {
    const std::string k(kind);
    if (k == "naive" || k == "Naive") {
      options.kind = EngineKind::Naive;
    } else if (k == "threaded" || k == "Threaded") {
      options.kind = EngineKind::Threaded;
    } else {
      throw std::invalid_argument("depengine: DEPENGINE_ENGINE must be 'naive' or 'threaded', not '" + k + "'");
    }
  }
  options.cpu_threads =
      static_cast<int>(detail::integer_from_environment("DEPENGINE_CPU_THREADS", options.cpu_threads, 0, kMaxCpuThreads));
  if (const char* batch = std::getenv("DEPENGINE_BATCH_PUSHES"); batch && *batch) {
    const std::string b(batch);
    if (b != "0" && b != "1") {
      throw std::invalid_argument("depengine: DEPENGINE_BATCH_PUSHES must be 0 or 1, not '" + b + "'");
    }
    options.batch_pushes = b == "1";
  }
  if (const char* bound = std::getenv("DEPENGINE_MAX_OPS_IN_FLIGHT"); bound && *bound) {
    if (std::string_view(bound) == "unlimited") {
      options.max_ops_in_flight = kUnlimitedOpsInFlight;
    } else {
      try {
        options.max_ops_in_flight =
            static_cast<std::size_t>(detail::integer_from_environment("DEPENGINE_MAX_OPS_IN_FLIGHT", 1, 1, LLONG_MAX));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string(e.what()) + "; or 'unlimited' for no bound");
      }
    }
  }
  return options;
}

}  // namespace depengine
