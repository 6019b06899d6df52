#pragma once
// The interpreter's side of the engine's threads: which references to Python
// objects may be dropped where, and what happens at interpreter exit.
//
// Engine workers hold the GIL only while they run a pushed Python function.
// Everything else a worker may end up dropping (a function that was never
// run because its inputs failed, an exception nobody reported) is released
// through `release_ref`: at once when the thread holds the GIL, otherwise
// queued and released by the next binding call made with the GIL. So no
// worker ever waits for the GIL except to run Python code.
//
// At interpreter exit (an `atexit` handler) `shutdown` stops new Python
// functions from being pushed, waits until every pushed one has run, and
// then stops worker threads from calling Python at all. References are still
// dropped by threads that hold the GIL (the objects the interpreter frees as
// it tears down its modules), until `on_interpreter_gone` (Py_AtExit); what a
// thread without the GIL drops after shutdown leaks, as the process ends.

#include <Python.h>

#include <atomic>

namespace depengine::python {

/// True until `shutdown` drained the engines: worker threads may take the GIL,
/// and binding calls may release it.
bool python_alive();

/// Releases the GIL for its scope (when `release` is true), unless shutdown
/// has drained the engines: a thread that gives the GIL up after that (a
/// daemon thread still running Python) could be stopped by the finalizing
/// interpreter as it takes it back, in the middle of C++ frames. Past that
/// point nothing the engines run needs the GIL, so waiting with it is safe.
/// Shutdown waits for the threads that released it before to take it back.
class ReleaseGil {
 public:
  explicit ReleaseGil(bool release = true) {
    if (release) saved_ = begin();
  }
  ~ReleaseGil() {
    if (saved_ != nullptr) end(saved_);
  }
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;

 private:
  static PyThreadState* begin();
  static void end(PyThreadState* saved);
  PyThreadState* saved_ = nullptr;
};

/// Drops one reference to `object`, from any thread (see above).
void release_ref(PyObject* object);
/// Releases the references queued by threads without the GIL. Call with the GIL.
void release_queued_refs();

/// Counts the pushed Python functions not yet destroyed. `try_enter` fails
/// (and counts nothing) once shutdown began.
bool try_enter_python_op();
void leave_python_op();
int python_ops_alive();

/// The atexit handler: drains every live engine (see engine_handle.h).
void shutdown();
bool shutting_down();
/// The Py_AtExit callback: the interpreter is finalized.
void on_interpreter_gone();

/// An owned reference that is safe to drop from any thread.
class PyRef {
 public:
  PyRef() = default;
  /// Takes a new reference to `object` (needs the GIL).
  explicit PyRef(PyObject* object) : object_(object) { Py_XINCREF(object_); }
  static PyRef steal(PyObject* object) {
    PyRef r;
    r.object_ = object;
    return r;
  }
  PyRef(PyRef&& other) noexcept : object_(other.object_) { other.object_ = nullptr; }
  PyRef& operator=(PyRef&& other) noexcept {
    if (this != &other) {
      reset();
      object_ = other.object_;
      other.object_ = nullptr;
    }
    return *this;
  }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  ~PyRef() { reset(); }

  PyObject* get() const { return object_; }
  /// Gives up ownership: the caller drops the reference.
  PyObject* release() {
    PyObject* object = object_;
    object_ = nullptr;
    return object;
  }
  void reset() {
    if (object_ != nullptr) release_ref(object_);
    object_ = nullptr;
  }

 private:
  PyObject* object_ = nullptr;
};

}  // namespace depengine::python
