// EngineCore's side of graphs: capture (the recorder does the recording) and
// replay, which pushes one op holding every variable the graph touches
// outside itself (plus its own), whose function runs the nodes (GraphRun).

#include <memory>
#include <stdexcept>

#include "engine/dependency_tracker.h"
#include "engine/engine_core.h"
#include "engine/graph_capture.h"
#include "engine/graph_data.h"
#include "engine/op_pool.h"

namespace depengine {

using detail::GraphData;
using detail::OpBlock;
using detail::OpKind;

std::shared_ptr<GraphData> EngineCore::capture(const std::function<void()>& body) {
  if (!body) throw std::invalid_argument("depengine: capture of a null body");
  detail::GraphRecorder recorder(*this);
  body();
  return recorder.finish();
}

namespace {
// A capture begun by capture_begin and not yet ended, on this thread.
thread_local std::unique_ptr<detail::GraphRecorder> t_open_capture;
}  // namespace

void EngineCore::capture_begin() {
  if (detail::GraphRecorder::capturing()) {
    throw std::logic_error("depengine: capture begun inside a capture (captures do not nest)");
  }
  t_open_capture = std::make_unique<detail::GraphRecorder>(*this);
}

std::shared_ptr<GraphData> EngineCore::capture_end() {
  if (!t_open_capture || t_open_capture->engine() != this) {
    throw std::logic_error("depengine: capture ended without a capture begun on this thread for this engine");
  }
  // Taken first: a finish that throws still ends the capture.
  const std::unique_ptr<detail::GraphRecorder> recorder = std::move(t_open_capture);
  return recorder->finish();
}

void EngineCore::replay(const std::shared_ptr<GraphData>& graph, const PushOptions& options) {
  if (!graph) throw std::invalid_argument("depengine: replay of an empty graph (moved from, or default-made)");
  if (graph->engine != this) throw std::invalid_argument("depengine: replay of a graph captured on another engine");
  if (detail::GraphRecorder::active_for(this)) {
    throw std::logic_error("depengine: replay inside a capture (graphs do not nest)");
  }
  if (!options.device.is_cpu()) {
    throw std::invalid_argument("depengine: a replay is placed on the CPU; its ops keep their own devices");
  }
  if (graph->nodes.empty()) return;
  if (kind() == EngineKind::Naive || (!graph->runs_as_dag && !graph->runs_on_one_device)) {
    for (const detail::GraphVar& v : graph->vars) {
      if (vars_.find(v.var) == nullptr) throw_deleted_graph_var(*v.state);
    }
    return replay_by_pushing(graph);
  }
  OpBlock* op;
  if (graph->runs_as_dag) {
    op = make_replay_op(*graph, options, OpKind::Async, Device::cpu());
    op->async_fn = [graph, op](RunContext&, Completion done) { graph->run.start(*op, graph, std::move(done)); };
  } else {
    op = make_replay_op(*graph, options, OpKind::Sync, graph->device);
    op->fn = [graph, op](RunContext& ctx) { graph->run.run_in_order(*op, ctx); };
    op->stream_graph = graph.get();
  }
  if (stall_watch_) [[unlikely]] stall_watch_->pushed(*op);
  submit(op);
}

void EngineCore::throw_deleted_graph_var(const detail::VarState& var) {
  const std::string label = var.name.empty() ? "#" + std::to_string(var.slot) : "'" + var.name + "'";
  throw std::invalid_argument("depengine: replay of a graph whose variable " + label + " was deleted");
}

OpBlock* EngineCore::make_replay_op(const GraphData& graph, const PushOptions& options, OpKind kind,
                                   Device device) {
  // make_op's work, with the entries sorted once at capture.
  Executor* executor = executor_for(device);
  if (executor == nullptr) [[unlikely]] throw_unknown_device("graph replay", device);
  OpBlock* op = detail::OpPool::acquire();
  std::vector<detail::Entry>& entries = op->entries;
  try {
    entries.reserve(graph.replay_entries.size());
  } catch (...) {
    detail::OpPool::release(op);
    throw;
  }
  for (const detail::ReplayEntry& r : graph.replay_entries) {
    if (!detail::VarTable::is_current(*r.state, r.generation)) [[unlikely]] {
      detail::OpPool::release(op);
      throw_deleted_graph_var(*r.state);
    }
    // With an adoption, the registration makes the entries the graph
    // does not hold already.
    if (!graph.adoption) entries.emplace_back().place(r.state, op, r.write, r.position, r.generation);
  }
  op->adoption = graph.adoption.get();
  op->engine = this;
  op->kind = kind;
  op->runs_graph = true;
  op->priority = options.priority;
  op->bytes = 0;  // the graph's nodes carry their own
  op->device = device;
  op->property = options.property;
  op->name.assign(options.name.empty() ? std::string_view("graph replay") : options.name);
  op->named = true;
  op->executor = executor;
  op->device_uses_fences = executor->uses_fences();
  if (op->device_uses_fences) op->entry_fences.resize(entries.size());
  if (kind == OpKind::Async) {
    op->ticket.fetch_add(1, std::memory_order_relaxed);  // arm: odd
    op->holds.store(2, std::memory_order_relaxed);
  }
  return op;
}

void EngineCore::replay_by_pushing(const std::shared_ptr<GraphData>& graph) {
  std::vector<Var> reads;
  std::vector<Var> writes;
  for (std::uint32_t i = 0; i < graph->nodes.size(); ++i) {
    const detail::GraphNode& node = graph->nodes[i];
    reads.clear();
    writes.clear();
    for (const detail::GraphAccess& a : node.accesses) (a.write ? writes : reads).push_back(graph->vars[a.var].var);
    const PushOptions options{.priority = node.priority, .name = node.name, .device = node.device,
                              .property = node.property, .bytes = node.bytes};
    if (node.kind == OpKind::Sync) {
      push([graph, i](RunContext& ctx) { graph->nodes[i].fn(ctx); }, reads, writes, options);
    } else {
      push_async([graph, i](RunContext& ctx, Completion done) { graph->nodes[i].async_fn(ctx, std::move(done)); },
                 reads, writes, options);
    }
  }
}

void EngineCore::release_graph(GraphData& graph) noexcept {
  // The variables the body deleted: their deletion waited for the graph.
  // Those it made and kept (a tensor it returned) are the caller's to delete.
  for (detail::GraphVar& v : graph.vars) {
    if (!v.inside || !v.deleted_in_body) continue;
    try {
      delete_var_now(v.var, std::move(v.release), v.drops_failure);
    } catch (...) {
      // Deleted already (a release that failed is filed by the deletion).
    }
  }
  try {
    delete_var_now(graph.sequence_var, {});
  } catch (...) {
  }
}

void EngineCore::fail_var(detail::VarState& var, const detail::Entry* entry, std::exception_ptr error) {
  {
    std::lock_guard lock(var.lock);
    if (entry) detail::dependency::propagate_failure(var, *entry, error);
    else detail::dependency::set_error(var, error);
  }
  std::lock_guard lock(failures_mutex_);
  failures_.push_back({&var, var.generation.load(std::memory_order_relaxed), std::move(error)});
}

}  // namespace depengine
