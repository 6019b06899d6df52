#pragma once
/// \file graph.h
/// `Graph`: a sequence of pushes captured once and replayed many times.
///
/// `Engine::capture(body)` runs `body` on the calling thread with capture on:
/// every `push`, `push_async`, tensor op, `new_var` and `delete_var` it makes
/// on that engine from that thread is recorded, in order, and not run.
/// `Engine::replay(graph)` then has exactly the effect of pushing the
/// recorded ops again in that order, at that point of the thread's pushes,
/// but the dependencies among them were computed once, at capture: a replay
/// touches each outside variable's version queue once, not once per op.
///
/// Rules (docs/graphs.md has the details):
/// - Blocking calls inside the body throw `std::logic_error`; pushes from
///   other threads meanwhile run as usual.
/// - Variables (and tensors) the body creates belong to the graph: made once,
///   at capture, and reused by every replay. Those the body deletes are
///   deleted when the graph is destroyed (after its replays in flight); those
///   it keeps (a tensor it hands out) live on, as after pushing the ops
///   eagerly. Deleting a variable made outside the body is an error: the
///   variable is deleted, and `capture` throws `std::invalid_argument` when
///   the body returns (not the deletion itself, which may come from a
///   tensor's destructor).
/// - A replay is ordered against everything pushed before and after it on
///   the variables it touches, as one operation that reads what the graph
///   only reads and writes what it writes. Replays of one graph run one
///   after another. Errors propagate as for pushed ops.
/// - Replaying on another engine, or after an outside variable the graph
///   uses was deleted, throws `std::invalid_argument`.
/// - Destroy a graph before its engine.
///
/// Thread safety: a graph may be replayed from several threads at once.
///
/// \code
///   #include <depengine/graph.h>
///
///   depengine::Engine engine;
///   int x = 0;
///   depengine::Var vx = engine.new_var("x");
///   depengine::Graph step = engine.capture([&] {
///     engine.push([&](depengine::RunContext&) { x += 1; }, {}, {vx});
///     engine.push([&](depengine::RunContext&) { x *= 2; }, {}, {vx});
///   });
///   for (int i = 0; i < 3; ++i) engine.replay(step);
///   engine.wait_to_read(vx);   // x == 14 here
/// \endcode

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "depengine/engine.h"
#include "depengine/var.h"

namespace depengine {

namespace detail {
struct GraphData;
}

class Graph {
 public:
  /// An empty graph: replaying it throws.
  Graph() = default;
  /// Deletes the variables the body deleted, once the replays in flight are done.
  ~Graph();
  Graph(Graph&& other) noexcept = default;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Number of recorded operations.
  std::size_t size() const;
  /// The variables from outside the graph that its operations touch.
  std::vector<Var> variables() const;
  /// The variables the body created.
  std::vector<Var> own_variables() const;
  /// Number of dependencies among the recorded operations.
  std::size_t dependencies() const;
  /// The operations and their dependencies in Graphviz's dot language.
  std::string to_dot() const;

  /// For the engine and the C API.
  explicit Graph(std::shared_ptr<detail::GraphData> data) : data_(std::move(data)) {}
  const std::shared_ptr<detail::GraphData>& data() const { return data_; }

 private:
  void release() noexcept;
  std::shared_ptr<detail::GraphData> data_;
};

}  // namespace depengine
