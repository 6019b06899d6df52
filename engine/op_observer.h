#pragma once
// OpObserver: the profiler's view of the engine. When no observer is
// installed, each hook costs one predictable branch.

#include "depengine/run_context.h"
#include "engine/op_block.h"

namespace depengine::detail {

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  /// On the pushing thread, once the op is accepted and before it can start.
  virtual void on_push(const OpBlock& op) = 0;
  /// Around the op's function, on the thread that runs it.
  virtual void on_start(const OpBlock& op, const RunContext& ctx) = 0;
  virtual void on_end(const OpBlock& op, const RunContext& ctx) = 0;
  /// When the op has completed (for stream devices: later than on_end).
  virtual void on_complete(const OpBlock& op) = 0;
  /// `released` became ready because `by` completed (or, on a stream
  /// device, was launched): the arrows of the profiler's timeline. Called
  /// before `released` is dispatched, and before on_complete(by).
  virtual void on_release(const OpBlock& by, const OpBlock& released) = 0;
  /// Around a blocking call on a frontend thread.
  virtual void on_block_begin(const char* what) = 0;
  virtual void on_block_end(const char* what) = 0;
};

}  // namespace depengine::detail
