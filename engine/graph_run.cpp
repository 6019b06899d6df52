#include "engine/graph_run.h"

#include <algorithm>
#include <chrono>

#include "engine/engine_core.h"
#include "engine/graph_data.h"

namespace depengine::detail {

namespace {
// What a node run by the counters sees: the CPU, no stream.
const RunContext kCpuContext{.device = Device::cpu(), .name = {}};
}  // namespace

void GraphRun::start(const OpBlock& replay_op, const std::shared_ptr<GraphData>& graph, Completion done) {
  prepare(replay_op);
  done_ = std::move(done);
  main_stack_.clear();
  // Reversed: the stack pops the first-pushed root first.
  for (auto it = graph_.roots.rbegin(); it != graph_.roots.rend(); ++it) main_stack_.push_back(*it);
  drain(main_stack_, &graph);
}

void GraphRun::run_in_order(const OpBlock& replay_op, RunContext& ctx) {
  prepare(replay_op);
  // Push order is an order the dependencies allow.
  for (std::uint32_t i = 0; i < graph_.nodes.size(); ++i) run_node(i, ctx);
  file_errors();
}

void GraphRun::prepare(const OpBlock& replay_op) {
  replay_op_ = &replay_op;
  const std::size_t n = graph_.nodes.size();
  if (pending_size_ != n) {
    pending_ = std::make_unique<std::atomic<std::int32_t>[]>(n);
    pending_size_ = n;
    var_error_.assign(graph_.vars.size(), nullptr);
    has_entry_.assign(graph_.vars.size(), 1);
    own_error_.assign(n, nullptr);
    max_helpers_ = std::max(0, graph_.engine->cpu_threads() - 1);
  }
  for (std::size_t i = 0; i < n; ++i) {
    pending_[i].store(static_cast<std::int32_t>(graph_.nodes[i].predecessors.size()), std::memory_order_relaxed);
  }
  if (errors_to_clear_) {
    std::fill(var_error_.begin(), var_error_.end(), nullptr);
    std::fill(own_error_.begin(), own_error_.end(), nullptr);
    errors_to_clear_ = false;
  }
  bool any = false;
  // The variables' errors as the replay op was granted them (its own
  // variables' too: they keep an unreported failure from one replay to the
  // next, as variables pushed on again would): what the first recorded push
  // on each would have seen.
  if (replay_op.input_failed.load(std::memory_order_acquire)) {
    for (const Entry& e : replay_op.entries) {
      std::exception_ptr error;
      {
        std::lock_guard lock(e.var->lock);
        error = e.error;
      }
      const std::int32_t var = graph_.var_at_position[e.position];
      if (error && var >= 0) {
        var_error_[static_cast<std::size_t>(var)] = std::move(error);
        any = true;
      }
    }
  }
  if (graph_.adoption) any = take_adopted_errors() || any;
  any_error_.store(any, std::memory_order_relaxed);
  remaining_.store(static_cast<std::int64_t>(n), std::memory_order_relaxed);
  work_ns_.store(0, std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_release);
}

// The variables the graph adopted carry their errors in themselves: what a
// replay before this one (or a write before the adoption) left there, and
// what no blocking call reported since, is the input the nodes see.
bool GraphRun::take_adopted_errors() {
  std::fill(has_entry_.begin(), has_entry_.end(), 0);
  for (const Entry& e : replay_op_->entries) {
    const std::int32_t var = graph_.var_at_position[e.position];
    if (var >= 0) has_entry_[static_cast<std::size_t>(var)] = 1;
  }
  bool any = false;
  for (std::size_t k = 0; k < graph_.vars.size(); ++k) {
    VarState& state = *graph_.vars[k].state;
    if (has_entry_[k] || !state.failed.load(std::memory_order_acquire)) continue;
    std::lock_guard lock(state.lock);
    if (state.error) {
      var_error_[k] = state.error;
      any = true;
    }
  }
  return any;
}

void GraphRun::drain(Stack& stack, const std::shared_ptr<GraphData>* graph) {
  const auto began = std::chrono::steady_clock::now();
  std::int64_t completed = 0;
  for (;;) {
    if (stack.empty() && !take_shared(stack)) break;
    // Before running one: a node may take long, and those ready beside it
    // should not wait for it.
    if (graph != nullptr && stack.size() > 1 && helpers_.load(std::memory_order_relaxed) < max_helpers_ &&
        shared_size_.load(std::memory_order_relaxed) == 0 && worth_a_helper(stack.size())) {
      offload(stack, *graph);
    }
    const std::uint32_t index = stack.back();
    stack.pop_back();
    run_node(index, kCpuContext);
    ++completed;
    for (std::uint32_t s : graph_.nodes[index].successors) {
      // A node with one predecessor is released by it alone: no count to share.
      if (graph_.nodes[s].predecessors.size() == 1 || pending_[s].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        stack.push_back(s);
      }
    }
  }
  if (completed != 0) {
    const auto spent = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began);
    work_ns_.fetch_add(spent.count(), std::memory_order_relaxed);
  }
  // Counted once per drain, not per node: the drain that completes the last
  // nodes finishes the run (a drain that ran nothing never does).
  if (completed != 0 && remaining_.fetch_sub(completed, std::memory_order_acq_rel) == completed) finish();
}

// Half of `ready` nodes is worth a helper when, at the last run's cost per
// node, it takes longer than a helper costs to start: a push, and a worker
// that may have to wake up. Until a run has been measured, it is.
bool GraphRun::worth_a_helper(std::size_t ready) const {
  const std::int64_t per_node = node_ns_.load(std::memory_order_relaxed);
  return per_node < 0 || static_cast<std::int64_t>(ready / 2) * per_node >= kHelperCostNs;
}

bool GraphRun::take_shared(Stack& stack) {
  if (shared_size_.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard lock(shared_mutex_);
  if (shared_.empty()) return false;
  const std::size_t take = std::max<std::size_t>(1, shared_.size() / 2);
  stack.insert(stack.end(), shared_.end() - static_cast<std::ptrdiff_t>(take), shared_.end());
  shared_.resize(shared_.size() - take);
  shared_size_.store(shared_.size(), std::memory_order_release);
  return true;
}

void GraphRun::offload(Stack& stack, const std::shared_ptr<GraphData>& graph) {
  // The oldest half: the drain goes on with the nodes it made ready last.
  const auto give = static_cast<std::ptrdiff_t>(stack.size() / 2);
  {
    std::lock_guard lock(shared_mutex_);
    shared_.insert(shared_.end(), stack.begin(), stack.begin() + give);
    shared_size_.store(shared_.size(), std::memory_order_release);
  }
  stack.erase(stack.begin(), stack.begin() + give);
  helpers_.fetch_add(1, std::memory_order_relaxed);
  try {
    graph_.engine->push([graph, epoch = epoch_.load(std::memory_order_relaxed)](
                            RunContext&) { graph->run.help(epoch); },
                        {}, {}, PushOptions{.name = "graph helper"});
  } catch (...) {
    // Without a helper this drain takes the nodes back itself.
    helpers_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void GraphRun::help(std::uint64_t epoch) {
  if (epoch_.load(std::memory_order_acquire) == epoch) {
    Stack stack;
    drain(stack, nullptr);
  }
  helpers_.fetch_sub(1, std::memory_order_relaxed);
}

void GraphRun::run_node(std::uint32_t index, const RunContext& base) {
  GraphNode& node = graph_.nodes[index];
  if (any_error_.load(std::memory_order_acquire)) [[unlikely]] {
    // Of several failed inputs, the first listed (accesses are in list order).
    for (const GraphAccess& a : node.accesses) {
      if (const std::exception_ptr& error = var_error_[a.var]) {
        const std::exception_ptr input = error;  // a copy: the writes below may overwrite `error`'s slot
        for (std::size_t i = node.reads; i < node.accesses.size(); ++i) var_error_[node.accesses[i].var] = input;
        return;
      }
    }
  }
  if (std::exception_ptr error = invoke_node(index, base)) fail_node(index, std::move(error));
}

std::exception_ptr GraphRun::invoke_node(std::uint32_t index, const RunContext& base) {
  GraphNode& node = graph_.nodes[index];
  RunContext ctx{.device = base.device,
                 .stream = base.stream,
                 .stream_index = base.stream_index,
                 .property = node.property,
                 .name = node.name};
  try {
    node.fn(ctx);
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

void GraphRun::fail_node(std::uint32_t index, std::exception_ptr error) {
  GraphNode& node = graph_.nodes[index];
  for (std::size_t i = node.reads; i < node.accesses.size(); ++i) var_error_[node.accesses[i].var] = error;
  own_error_[index] = std::move(error);
  any_error_.store(true, std::memory_order_release);
}

void GraphRun::finish() {
  const auto nodes = static_cast<std::int64_t>(graph_.nodes.size());
  node_ns_.store(work_ns_.load(std::memory_order_relaxed) / nodes, std::memory_order_relaxed);
  file_errors();
  Completion done = std::move(done_);
  done();
}

void GraphRun::file_errors() {
  if (any_error_.load(std::memory_order_acquire)) [[unlikely]] {
    EngineCore& engine = *graph_.engine;
    for (const Entry& e : replay_op_->entries) {
      const std::int32_t k = graph_.var_at_position[e.position];
      if (k < 0) continue;
      const GraphVar& v = graph_.vars[static_cast<std::size_t>(k)];
      if (v.written && var_error_[static_cast<std::size_t>(k)]) engine.fail_var(*e.var, &e, var_error_[static_cast<std::size_t>(k)]);
    }
    for (std::size_t k = 0; k < graph_.vars.size(); ++k) {
      const GraphVar& v = graph_.vars[k];
      if (!has_entry_[k] && v.written && var_error_[k]) engine.fail_var(*v.state, nullptr, var_error_[k]);
    }
    // A node that writes nothing and failed itself is reported by wait_all.
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
      const GraphNode& node = graph_.nodes[i];
      if (own_error_[i] && node.reads == node.accesses.size()) engine.record_unattached_failure(own_error_[i]);
    }
    errors_to_clear_ = true;
  }
}

}  // namespace depengine::detail
