#pragma once
// GraphRun: one replay of a captured graph. Of plain CPU ops (start): run by
// the dependency counts computed at capture (the mechanism of replay): a node
// whose predecessors have all completed is ready; no variable's version
// queue is touched. The replay op that owns the run holds every outside
// variable the graph touches, so the nodes see them exactly as the recorded
// pushes would have.
//
// Nodes run on the thread that runs the replay op, continuing inline with
// the successors they make ready; when more than one is ready, workers are
// free and the nodes take long enough (worth_a_helper), a helper operation
// (pushed on the engine, no variables) shares them.
// Errors follow the engine's rules per node: a node that throws marks what
// it writes as failed, and a node whose inputs failed is skipped and passes
// the error on; the variables' errors start from those the replay op was
// granted with and end in the variables it writes.
//
// Of plain ops on one stream device: run_in_order runs the nodes in push
// order on the replay op's stream; a device that spreads them over its
// streams (StreamGraph) calls begin_on_streams, run_on_stream per node after
// its predecessors, then end_on_streams. The same per-node errors either way;
// a device that records the nodes' work (CUDA graphs) calls invoke_node.
//
// One run per graph at a time: the replays of a graph serialise on its
// sequence variable (GraphData::sequence_var).

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "depengine/completion.h"
#include "depengine/run_context.h"

namespace depengine::detail {

struct GraphData;
struct OpBlock;

class GraphRun {
 public:
  explicit GraphRun(GraphData& graph) : graph_(graph) {}

  /// Runs every node of the graph once; `done` is called once all have
  /// completed (possibly before this returns). `replay_op` is the replay's
  /// engine op: its entries carry the input errors of the outside variables.
  /// `graph` is the shared owner of the run's GraphData, for helpers.
  void start(const OpBlock& replay_op, const std::shared_ptr<GraphData>& graph, Completion done);
  /// Runs every node once, in recorded order, on this thread with `ctx`
  /// (the replay op's, on the nodes' stream device): one launch for all.
  void run_in_order(const OpBlock& replay_op, RunContext& ctx);

  void begin_on_streams(const OpBlock& replay_op) { prepare(replay_op); }
  /// Safe on several threads at once for nodes whose predecessors have run:
  /// nodes that touch one variable are ordered by the graph's edges.
  void run_on_stream(std::uint32_t index, const RunContext& ctx) { run_node(index, ctx); }
  void end_on_streams() { file_errors(); }
  /// Whether an input or a node of the run in progress failed.
  bool failed() const { return any_error_.load(std::memory_order_acquire); }
  /// The node's function alone: no skipping, no error recorded.
  std::exception_ptr invoke_node(std::uint32_t index, const RunContext& base);

 private:
  using Stack = std::vector<std::uint32_t>;

  void prepare(const OpBlock& replay_op);
  void drain(Stack& stack, const std::shared_ptr<GraphData>* graph);
  void help(std::uint64_t epoch);
  void run_node(std::uint32_t index, const RunContext& base);
  void fail_node(std::uint32_t index, std::exception_ptr error);
  bool take_adopted_errors();
  bool worth_a_helper(std::size_t ready) const;
  bool take_shared(Stack& stack);
  void offload(Stack& stack, const std::shared_ptr<GraphData>& graph);
  void finish();
  /// Leaves the nodes' failures in the variables the replay op holds.
  void file_errors();

  GraphData& graph_;
  std::unique_ptr<std::atomic<std::int32_t>[]> pending_;  // per node: predecessors not yet completed
  std::size_t pending_size_ = 0;
  int max_helpers_ = 0;
  // Per variable of the graph: its error as the next node to touch it sees it.
  std::vector<std::exception_ptr> var_error_;
  // Per variable of the graph: the run's replay op holds it through an
  // entry (else the graph adopted it: engine/var_adoption.h).
  std::vector<std::uint8_t> has_entry_;
  // Per node: the error it threw itself (not one it passed on).
  std::vector<std::exception_ptr> own_error_;
  bool errors_to_clear_ = false;  // the last run left errors in the vectors above
  std::atomic<bool> any_error_{false};
  std::atomic<std::int64_t> remaining_{0};
  // Which run a helper was pushed for: one that starts after its run has
  // ended has nothing to do.
  std::atomic<std::uint64_t> epoch_{0};
  std::atomic<int> helpers_{0};
  // Time the drains of the run spent, and what the last run's came to per
  // node (-1: none measured yet), for worth_a_helper.
  std::atomic<std::int64_t> work_ns_{0};
  std::atomic<std::int64_t> node_ns_{-1};
  static constexpr std::int64_t kHelperCostNs = 20'000;
  std::mutex shared_mutex_;
  Stack shared_;  // ready nodes left for helpers
  std::atomic<std::size_t> shared_size_{0};
  Stack main_stack_;
  Completion done_;
  const OpBlock* replay_op_ = nullptr;  // of the run in progress
};

}  // namespace depengine::detail
