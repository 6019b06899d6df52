#pragma once
// The C++ objects behind the Python types `Engine`, `Var` and `Tensor`.
// Each holds a reference to its engine, so that the engine lives as long as
// anything made from it.

#include <string>
#include <utility>

#include <depengine/tensor.h>

#include "python/src/engine_handle.h"
#include "python/src/python_runtime.h"

namespace depengine::python {

/// Releases the GIL for the scope when this thread holds it and a pushed
/// Python function may need it (a push or a deletion can wait for
/// back-pressure; with no Python function in flight, the workers never need
/// the GIL to make room, so the common case keeps it and costs nothing).
class GilReleaseIfNeeded : ReleaseGil {
 public:
  GilReleaseIfNeeded() : ReleaseGil(python_ops_alive() > 0 && PyGILState_Check()) {}
};

struct PyEngine {
  EngineRef ref;
  Engine& engine() const { return ref->engine(); }
};

/// A variable. One made by `Engine.new_var` is owned: deleting the Python
/// object (or `Engine.delete_var`) deletes the variable, as an operation.
/// `Tensor.var` gives a view that the tensor owns.
struct PyVar {
  EngineRef owner;
  Var var;
  std::string name;
  bool owned = false;
  bool deleted = false;

  PyVar(EngineRef o, Var v, std::string n, bool own)
      : owner(std::move(o)), var(v), name(std::move(n)), owned(own) {}
  PyVar(PyVar&&) = default;
  ~PyVar() {
    if (owned && !deleted && owner) {
      GilReleaseIfNeeded unlocked;
      try {
        owner->engine().delete_var(var);
      } catch (...) {
        // A destructor must not throw; the engine rejects nothing valid here.
      }
    }
  }
};

/// A tensor and its engine. Its storage is released (through the engine,
/// after every operation on it) when the last handle goes.
struct PyTensor {
  EngineRef owner;  // declared first: destroyed after the tensor
  Tensor tensor;

  PyTensor() = default;
  PyTensor(EngineRef o, Tensor t) : owner(std::move(o)), tensor(std::move(t)) {}
  PyTensor(PyTensor&&) = default;
  ~PyTensor() {
    if (tensor.defined()) {
      GilReleaseIfNeeded unlocked;
      tensor = Tensor();
    }
  }

  /// A result made by an op on this tensor.
  PyTensor with(Tensor t) const { return PyTensor(owner, std::move(t)); }
};

}  // namespace depengine::python
