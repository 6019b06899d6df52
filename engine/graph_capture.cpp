#include "engine/graph_capture.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/engine_core.h"

namespace depengine::detail {

GraphRecorder::GraphRecorder(EngineCore& engine) : engine_(&engine), graph_(std::make_shared<GraphData>()) {
  if (t_active != nullptr) throw std::logic_error("depengine: capture called inside a capture (captures do not nest)");
  graph_->engine = &engine;
  graph_->engine_id = engine.vars_.engine_id();
  graph_->sequence_var = engine.new_var("graph sequence");
  t_active = this;
}

GraphRecorder::~GraphRecorder() {
  t_active = nullptr;
  for (OutsideDeletion& d : outside_deletions_) {
    try {
      engine_->delete_var_now(d.var, std::move(d.release), d.drop_failure);
    } catch (...) {
      // Deleted meanwhile by another thread: what was asked is done.
    }
  }
  if (!finished_) engine_->release_graph(*graph_);
}

std::uint32_t GraphRecorder::var_index(VarState* state, std::uint32_t generation) {
  auto [it, added] = index_of_.try_emplace(state, static_cast<std::uint32_t>(graph_->vars.size()));
  if (added) {
    GraphVar& v = graph_->vars.emplace_back();
    v.var = Var(graph_->engine_id, state->slot, generation);
    v.state = state;
  }
  return it->second;
}

void GraphRecorder::created(Var var, VarState* state) {
  const std::uint32_t index = var_index(state, var.generation());
  graph_->vars[index].inside = true;
}

void GraphRecorder::deleted(Var var, ReleaseFn&& release, bool drop_failure) {
  VarState* state = engine_->vars_.find(var);
  auto it = state != nullptr ? index_of_.find(state) : index_of_.end();
  if (state == nullptr || state->delete_pushed.load(std::memory_order_acquire)) {
    throw std::invalid_argument(var.is_null() ? "depengine: delete_var of a null Var"
                                              : "depengine: delete_var of an unknown or deleted variable");
  }
  if (it == index_of_.end() || !graph_->vars[it->second].inside) {
    for (const OutsideDeletion& d : outside_deletions_) {
      if (d.var == var) throw std::invalid_argument("depengine: delete_var of a variable already deleted");
    }
    std::string label = state->name.empty() ? "#" + std::to_string(state->slot) : "'" + state->name + "'";
    outside_deletions_.push_back({var, std::move(release), drop_failure, std::move(label)});
    return;
  }
  GraphVar& v = graph_->vars[it->second];
  if (v.deleted_in_body) throw std::invalid_argument("depengine: delete_var of a variable already deleted");
  v.deleted_in_body = true;
  v.drops_failure = drop_failure;
  v.release = std::move(release);
}

void GraphRecorder::record(const OpBlock& op, OpFn&& fn, AsyncOpFn&& async_fn) {
  GraphNode node;
  node.kind = op.kind;
  node.device = op.device;
  node.priority = op.priority;
  node.property = op.property;
  node.bytes = op.bytes;
  node.name = std::string(op.name_view());
  node.accesses.resize(op.entries.size());
  for (const Entry& e : op.entries) {
    const std::uint32_t index = var_index(e.var, e.generation);
    if (graph_->vars[index].deleted_in_body) {
      const std::string label = e.var->name.empty() ? "#" + std::to_string(e.var->slot) : "'" + e.var->name + "'";
      throw std::invalid_argument("depengine: a push inside a capture uses variable " + label +
                                  ", which the body deleted before");
    }
    node.accesses[e.position] = GraphAccess{index, e.write};
    if (!e.write) ++node.reads;
  }
  for (const GraphAccess& a : node.accesses) {
    (a.write ? graph_->vars[a.var].written : graph_->vars[a.var].read) = true;
  }
  node.fn = std::move(fn);
  node.async_fn = std::move(async_fn);
  if (node.kind != OpKind::Sync || !node.device.is_cpu()) graph_->runs_as_dag = false;
  graph_->nodes.push_back(std::move(node));
}

void GraphRecorder::compute_edges() {
  std::vector<GraphNode>& nodes = graph_->nodes;
  const auto none = static_cast<std::uint32_t>(-1);
  std::vector<std::uint32_t> last_writer(graph_->vars.size(), none);
  std::vector<std::vector<std::uint32_t>> readers(graph_->vars.size());
  // The node that last gained `p` as a predecessor: an edge is added once.
  std::vector<std::uint32_t> linked_to(nodes.size(), none);
  for (std::uint32_t n = 0; n < nodes.size(); ++n) {
    auto depend_on = [&](std::uint32_t p) {
      if (p == none || linked_to[p] == n) return;
      linked_to[p] = n;
      nodes[p].successors.push_back(n);
      nodes[n].predecessors.push_back(p);
      ++graph_->edges;
    };
    for (const GraphAccess& a : nodes[n].accesses) {
      if (!a.write) {
        depend_on(last_writer[a.var]);
        readers[a.var].push_back(n);
        continue;
      }
      // A write waits for the reads since the last write (which waited for
      // that write themselves), or else for the last write.
      if (readers[a.var].empty()) {
        depend_on(last_writer[a.var]);
      } else {
        for (std::uint32_t r : readers[a.var]) depend_on(r);
      }
      readers[a.var].clear();
      last_writer[a.var] = n;
    }
    if (nodes[n].predecessors.empty()) graph_->roots.push_back(n);
  }
}

void GraphRecorder::compute_replay_lists() {
  GraphData& g = *graph_;
  g.replay_reads.clear();
  g.replay_writes.clear();
  g.var_at_position.clear();
  for (std::uint32_t k = 0; k < g.vars.size(); ++k) {
    const GraphVar& v = g.vars[k];
    if (!v.inside && v.read && !v.written) {
      g.replay_reads.push_back(v.var);
      g.var_at_position.push_back(static_cast<std::int32_t>(k));
    }
  }
  // The inside variables too, so that their deletion, when the graph goes,
  // waits for the replays in flight.
  for (std::uint32_t k = 0; k < g.vars.size(); ++k) {
    const GraphVar& v = g.vars[k];
    if (v.inside || v.written) {
      g.replay_writes.push_back(v.var);
      g.var_at_position.push_back(static_cast<std::int32_t>(k));
    }
  }
  g.replay_writes.push_back(g.sequence_var);
  g.var_at_position.push_back(-1);
  g.replay_entries.clear();
  auto add = [&](const std::vector<Var>& list, bool write, std::uint32_t first_position) {
    for (std::uint32_t i = 0; i < list.size(); ++i) {
      g.replay_entries.push_back({engine_->vars_.find(list[i]), list[i].generation(), first_position + i, write});
    }
  };
  add(g.replay_reads, false, 0);
  add(g.replay_writes, true, static_cast<std::uint32_t>(g.replay_reads.size()));
  std::sort(g.replay_entries.begin(), g.replay_entries.end(),
            [](const ReplayEntry& a, const ReplayEntry& b) { return a.state < b.state; });
}

std::shared_ptr<GraphData> GraphRecorder::finish() {
  t_active = nullptr;
  GraphData& g = *graph_;
  if (!g.runs_as_dag && !g.nodes.empty()) {
    const Device device = g.nodes.front().device;
    g.runs_on_one_device = std::all_of(g.nodes.begin(), g.nodes.end(), [&](const GraphNode& n) {
      return n.kind == OpKind::Sync && n.device == device;
    });
    g.device = device;
  }
  if (!outside_deletions_.empty()) {
    throw std::invalid_argument("depengine: the body of a capture deleted variable " +
                                outside_deletions_.front().label +
                                ", made outside it; a graph may delete only its own variables (the variable is "
                                "deleted, and no graph is made)");
  }
  compute_edges();
  compute_replay_lists();
  if (g.runs_as_dag) {
    std::vector<bool> adoptable;
    adoptable.reserve(g.replay_entries.size());
    for (const ReplayEntry& r : g.replay_entries) adoptable.push_back(g.var_at_position[r.position] >= 0);
    g.adoption = std::make_unique<VarAdoption>(g.replay_entries, std::move(adoptable));
  }
  finished_ = true;
  return std::move(graph_);
}

}  // namespace depengine::detail
