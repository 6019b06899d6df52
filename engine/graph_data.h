#pragma once
// GraphData: a captured sequence of pushes, as capture leaves it and replay
// reads it. Dependencies among the graph's own ops are computed once, here
// (successor lists and predecessor counts); what the graph touches outside
// itself is summed up per variable, for the one engine op a replay pushes.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "depengine/engine.h"
#include "engine/graph_run.h"
#include "engine/op_block.h"
#include "engine/var_adoption.h"

namespace depengine::detail {

/// A variable the graph's ops touch.
struct GraphVar {
  Var var;
  VarState* state = nullptr;
  bool inside = false;   // created by the body: the graph owns it
  bool read = false;     // some op reads it
  bool written = false;  // some op writes it
  bool deleted_in_body = false;
  bool drops_failure = false;  // deleted as a helper (Engine::delete_helper_var)
  ReleaseFn release;  // an inside variable's, given to delete_var in the body
};

/// One variable of a recorded op, in the op's list order (reads, then writes).
struct GraphAccess {
  std::uint32_t var = 0;  // index into GraphData::vars
  bool write = false;
};

/// One recorded push.
struct GraphNode {
  OpKind kind = OpKind::Sync;  // Sync or Async
  OpFn fn;
  AsyncOpFn async_fn;
  Device device;
  int priority = 0;
  OpProperty property = OpProperty::Normal;
  std::size_t bytes = 0;  // PushOptions::bytes
  std::string name;
  std::vector<GraphAccess> accesses;
  std::uint32_t reads = 0;  // accesses[0, reads) are reads
  std::vector<std::uint32_t> successors;
  std::vector<std::uint32_t> predecessors;
};

struct GraphData {
  EngineCore* engine = nullptr;
  std::uint32_t engine_id = 0;
  std::vector<GraphVar> vars;
  std::vector<GraphNode> nodes;
  std::vector<std::uint32_t> roots;  // nodes without predecessors, in push order
  std::size_t edges = 0;
  // Serialises the replays of this graph (its run state is one per graph),
  // also where the graph touches nothing but what it only reads.
  Var sequence_var;
  // Every node is a plain CPU op: a replay runs them by the counters above
  // (GraphRun::start). Every node is a plain op on one stream device: a
  // replay is one op there that runs them in order on its stream
  // (GraphRun::run_in_order). Otherwise a replay pushes each node again.
  bool runs_as_dag = true;
  bool runs_on_one_device = false;
  Device device;  // the nodes' device, when runs_on_one_device
  // The replay op's variables: outside ones read only, then those written,
  // the inside ones and sequence_var; and, by position in those lists,
  // the graph variable (or -1 for sequence_var).
  std::vector<Var> replay_reads;
  std::vector<Var> replay_writes;
  std::vector<std::int32_t> var_at_position;
  /// The replay op's entries as make_op would sort them (by variable
  /// address, the lock order), so that a replay need not sort them again.
  std::vector<ReplayEntry> replay_entries;
  /// A graph that runs as a DAG holds the variables only it touches without
  /// entries (after replay_entries: it lets go of them first).
  std::unique_ptr<VarAdoption> adoption;
  /// The one-device replay's device's own (StreamGraph::device_state).
  std::shared_ptr<void> device_state;
  GraphRun run;

  GraphData() : run(*this) {}
  GraphData(const GraphData&) = delete;
  GraphData& operator=(const GraphData&) = delete;
};

}  // namespace depengine::detail
