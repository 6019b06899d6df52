#pragma once
// `EngineHandle`: one engine, shared by the Python `Engine` object and every
// `Var` and `Tensor` made from it, so that no tensor outlives its engine.
//
// The engine is destroyed with the last reference, and its destructor waits
// for every operation pushed on it. Some of them may be Python functions,
// which need the GIL; so the destructor releases the GIL while it waits,
// and when the last reference goes inside an operation (where waiting would
// wait for itself), a helper thread destroys the engine.

#include <memory>
#include <vector>

#include <depengine/engine.h>

namespace depengine::python {

class EngineHandle {
 public:
  explicit EngineHandle(const EngineOptions& options);
  ~EngineHandle();
  EngineHandle(const EngineHandle&) = delete;
  EngineHandle& operator=(const EngineHandle&) = delete;

  Engine& engine() { return *engine_; }

  /// Every engine alive in the process.
  static std::vector<std::shared_ptr<EngineHandle>> live();
  /// The process-wide engine, created on first use with the default options
  /// (and the environment variables). Throws after shutdown.
  static std::shared_ptr<EngineHandle> default_engine();
  /// Forgets the default engine (at shutdown); it ends with its last user.
  static void drop_default();

 private:
  std::unique_ptr<Engine> engine_;
};

using EngineRef = std::shared_ptr<EngineHandle>;

EngineRef make_engine(const EngineOptions& options);

}  // namespace depengine::python
