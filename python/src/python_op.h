#pragma once
// Python functions as engine operations, and their exceptions.
//
// A pushed Python function runs on an engine worker with the GIL taken. If
// it raises, the Python exception (its type, value and traceback) travels
// through the engine inside a `PythonOpError` and is raised again, as the
// same object, by the first blocking call that reports the failure. That call
// hands the object over to Python: its traceback holds frames, and through
// them the program's variables, which a reference kept in the engine would
// keep alive in a cycle the garbage collector cannot see. Later reports of
// the same failure (by operations that depended on it) raise a new
// exception of the same type with the same arguments.

#include <Python.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <depengine/engine.h>

#include "python/src/python_runtime.h"

namespace depengine::python {

class PythonOpError : public std::runtime_error {
 public:
  /// Takes the exception now set in the interpreter (needs the GIL).
  static PythonOpError fetch(std::string_view op_name);

  /// Raises the exception again in the interpreter (needs the GIL).
  void restore() const;

  /// At exit: drops the Python objects of every error not yet reported,
  /// which would otherwise keep the program's objects alive in a cycle
  /// through the engine until the process ends (needs the GIL).
  static void forget_unreported();

 private:
  struct State {
    State();
    ~State();
    PyRef exception;  // until the first report
    PyRef type;
    PyRef args;  // the exception's args, to make the later reports
    std::string message;
  };
  PythonOpError(std::string what, PyObject* exception);
  std::shared_ptr<State> state_;  // shared: exception_ptr copies are cheap and GIL-free
};

/// The operation that calls `fn()` (a new reference is taken; needs the GIL).
/// It drops `fn` once called, unless `reusable` (a push recorded by
/// Engine.capture, called at every replay). Throws std::runtime_error when
/// the interpreter is shutting down.
OpFn python_op(PyObject* fn, bool reusable = false);

/// True while this thread runs the body of Engine.capture
/// (python/src/graph_bindings.cpp).
bool in_capture_body();

}  // namespace depengine::python
