#pragma once
// GraphRecorder: what Engine::capture records while its body runs. The
// engine's push, push_async, new_var and delete_var ask it (through
// active_for) whether the calling thread is capturing for this engine; if so
// a push is validated as usual and recorded instead of run. finish() turns
// the recording into a GraphData: the dependencies among its ops, and per
// outside variable whether the graph reads or writes it.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "depengine/engine.h"
#include "engine/graph_data.h"
#include "engine/op_block.h"

namespace depengine {
class EngineCore;
}

namespace depengine::detail {

class GraphRecorder {
 public:
  /// Starts capturing on this thread. Throws std::logic_error when it
  /// already captures (captures do not nest).
  explicit GraphRecorder(EngineCore& engine);
  /// Stops capturing; without finish(), deletes the variables the body made.
  ~GraphRecorder();
  GraphRecorder(const GraphRecorder&) = delete;
  GraphRecorder& operator=(const GraphRecorder&) = delete;

  /// The recorder of this thread if it captures for `engine`, else null.
  static GraphRecorder* active_for(const EngineCore* engine) {
    GraphRecorder* r = t_active;
    return r != nullptr && r->engine_ == engine ? r : nullptr;
  }
  const EngineCore* engine() const { return engine_; }
  /// Whether this thread captures (for any engine): blocking calls throw.
  static bool capturing() { return t_active != nullptr; }

  /// Records `op`, a validated push the caller returns to the pool, with
  /// its function. Throws std::invalid_argument for a variable deleted
  /// earlier in the body.
  void record(const OpBlock& op, OpFn&& fn, AsyncOpFn&& async_fn);
  /// The body created `var`: it belongs to the graph.
  void created(Var var, VarState* state);
  /// The body deletes `var`: a variable of the graph's is released with the
  /// graph (with `release`). One made outside is deleted when the capture
  /// ends, and finish() then throws: the call may come from a destructor
  /// (a tensor's), where an exception would end the program. Either
  /// deletion keeps `drop_failure` (Engine::delete_helper_var).
  void deleted(Var var, ReleaseFn&& release, bool drop_failure);

  /// Ends the recording: computes the dependencies and the replay op's lists.
  /// Throws std::invalid_argument when the body deleted an outside variable.
  std::shared_ptr<GraphData> finish();

 private:
  std::uint32_t var_index(VarState* state, std::uint32_t generation);
  void compute_edges();
  void compute_replay_lists();

  EngineCore* engine_;
  std::shared_ptr<GraphData> graph_;
  std::unordered_map<VarState*, std::uint32_t> index_of_;
  struct OutsideDeletion {
    Var var;
    ReleaseFn release;
    bool drop_failure;
    std::string label;  // for the error
  };
  std::vector<OutsideDeletion> outside_deletions_;
  bool finished_ = false;
  static inline thread_local GraphRecorder* t_active = nullptr;
};

}  // namespace depengine::detail
