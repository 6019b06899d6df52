// The thin public classes: Engine, Completion, ReadyOp, Device.

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "depengine/completion.h"
#include "depengine/engine.h"
#include "depengine/executor.h"
#include "engine/engine_core.h"
#include "engine/graph_data.h"
#include "engine/op_block.h"
#include "engine/environment_profile.h"

namespace depengine {

// ---------------------------------------------------------------- Engine

namespace {

void validate(const EngineOptions& options) {
  if (options.kind != EngineKind::Threaded && options.kind != EngineKind::Naive) {
    throw std::invalid_argument("depengine: EngineOptions::kind is neither Threaded nor Naive");
  }
  if (options.max_ops_in_flight == 0) throw std::invalid_argument("depengine: max_ops_in_flight must be positive");
  if (options.cpu_threads < 0 || options.cpu_threads > kMaxCpuThreads) {
    throw std::invalid_argument("depengine: cpu_threads must be from 0 (one per core) to " +
                                std::to_string(kMaxCpuThreads) + ", not " + std::to_string(options.cpu_threads));
  }
}

}  // namespace

Engine::Engine(EngineOptions options) {
  options = apply_environment(options);
  validate(options);
  core_ = options.kind == EngineKind::Naive ? make_naive_engine(options) : make_threaded_engine(options);
  if (options.read_environment) detail::profile_from_environment(*core_);
}

Engine::~Engine() {
  // Destroying waits for every operation, the running one included: it would
  // never return. A destructor cannot throw, so the misuse ends the program
  // with its cause, instead of hanging it.
  if (EngineCore::in_operation()) {
    std::fputs("depengine: an Engine was destroyed from inside an operation, which would deadlock; aborting\n",
               stderr);
    std::abort();
  }
}

Var Engine::new_var(std::string_view name) { return core_->new_var(name); }
void Engine::push(OpFn fn, VarList reads, VarList writes, const PushOptions& options) {
  core_->push(std::move(fn), reads, writes, options);
}
void Engine::push_async(AsyncOpFn fn, VarList reads, VarList writes, const PushOptions& options) {
  core_->push_async(std::move(fn), reads, writes, options);
}
void Engine::delete_var(Var var, ReleaseFn release) { core_->delete_var(var, std::move(release)); }
void Engine::delete_helper_var(Var var) { core_->delete_var(var, {}, /*drop_failure=*/true); }
void Engine::wait_to_read(Var var) { core_->wait_to_read(var); }
void Engine::wait_to_write(Var var) { core_->wait_to_write(var); }
void Engine::wait_all() { core_->wait_all(); }
void Engine::add_device(Device device, std::unique_ptr<Executor> executor) {
  core_->add_device(device, std::move(executor));
}
bool Engine::has_device(Device device) const { return core_->has_device(device); }
EngineKind Engine::kind() const { return core_->kind(); }
int Engine::cpu_threads() const { return core_->cpu_threads(); }
std::string Engine::var_name(Var var) const { return core_->var_name(var); }

// ---------------------------------------------------------------- Completion

Completion::Completion(Completion&& other) noexcept : op_(other.op_), ticket_(other.ticket_) {
  other.op_ = nullptr;
}

Completion& Completion::operator=(Completion&& other) noexcept {
  if (this != &other) {
    if (op_) op_->engine->drop_async(op_, ticket_);
    op_ = other.op_;
    ticket_ = other.ticket_;
    other.op_ = nullptr;
  }
  return *this;
}

Completion::~Completion() {
  if (op_) op_->engine->drop_async(op_, ticket_);
}

void Completion::operator()(std::exception_ptr error) {
  if (op_ == nullptr) {
    throw std::logic_error("depengine: the completion of an asynchronous operation was called twice");
  }
  detail::OpBlock* op = op_;
  op_ = nullptr;
  op->engine->complete_async(op, ticket_, std::move(error));
}

namespace detail {
std::exception_ptr dropped_completion_error(const OpBlock& op) {
  return std::make_exception_ptr(std::logic_error(
      "depengine: asynchronous operation '" + std::string(op.name_view()) + "' dropped its Completion without calling it"));
}
}  // namespace detail

// ---------------------------------------------------------------- ReadyOp

Device ReadyOp::device() const { return op_->device; }
OpProperty ReadyOp::property() const { return op_->property; }
int ReadyOp::priority() const { return op_->priority; }
std::string_view ReadyOp::name() const { return op_->name_view(); }
bool ReadyOp::is_async() const { return op_->kind == detail::OpKind::Async; }
std::span<const Fence> ReadyOp::fences() const { return op_->fences; }

std::exception_ptr ReadyOp::input_error() const {
  // A graph replay's nodes sort out failed inputs one by one (GraphRun).
  return op_->runs_graph ? nullptr : EngineCore::input_error(*op_);
}

std::exception_ptr ReadyOp::invoke(RunContext& ctx) const { return op_->engine->invoke(op_, ctx); }

void ReadyOp::launched(Fence fence) const {
  op_->launch_fence = std::move(fence);
  op_->engine->on_launched(op_);
}

void ReadyOp::complete(std::exception_ptr error) const { op_->engine->on_completed(op_, std::move(error)); }

StreamGraph ReadyOp::stream_graph() const { return op_->stream_graph ? StreamGraph(op_) : StreamGraph(); }

// ---------------------------------------------------------------- StreamGraph

std::uint32_t StreamGraph::size() const { return static_cast<std::uint32_t>(op_->stream_graph->nodes.size()); }
OpProperty StreamGraph::property(std::uint32_t node) const { return op_->stream_graph->nodes.at(node).property; }
int StreamGraph::priority(std::uint32_t node) const { return op_->stream_graph->nodes.at(node).priority; }
std::span<const std::uint32_t> StreamGraph::predecessors(std::uint32_t node) const {
  return op_->stream_graph->nodes.at(node).predecessors;
}
void StreamGraph::begin(const RunContext& ctx) const { op_->engine->begin_stream_graph(op_, ctx); }
void StreamGraph::run(std::uint32_t node, const RunContext& ctx) const {
  if (node >= size()) throw std::out_of_range("depengine: StreamGraph::run of node " + std::to_string(node));
  op_->engine->run_stream_graph_node(op_, node, ctx);
}
void StreamGraph::end(const RunContext& ctx) const { op_->engine->end_stream_graph(op_, ctx); }
bool StreamGraph::failed() const { return op_->stream_graph->run.failed(); }
std::exception_ptr StreamGraph::invoke(std::uint32_t node, const RunContext& ctx) const {
  if (node >= size()) throw std::out_of_range("depengine: StreamGraph::invoke of node " + std::to_string(node));
  return op_->engine->invoke_stream_graph_node(op_, node, ctx);
}
std::shared_ptr<void>& StreamGraph::device_state() const { return op_->stream_graph->device_state; }

void ReadyOp::run_and_complete(RunContext& ctx) const {
  const bool async = is_async();
  std::exception_ptr error = invoke(ctx);
  if (!async) complete(std::move(error));
}

// ---------------------------------------------------------------- Device

std::string Device::to_string() const {
  switch (kind) {
    case DeviceKind::cpu:
      return index == 0 ? "cpu" : "cpu:" + std::to_string(index);
    case DeviceKind::cuda:
      return "cuda:" + std::to_string(index);
    case DeviceKind::emulated:
      return "emulated:" + std::to_string(index);
    case DeviceKind::custom:
      return "custom:" + std::to_string(index);
  }
  return "unknown kind " + std::to_string(static_cast<int>(kind)) + ":" + std::to_string(index);
}

}  // namespace depengine
