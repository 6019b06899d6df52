#include "python/src/python_op.h"

#include <mutex>
#include <unordered_set>

namespace depengine::python {

namespace {
std::mutex g_states_mutex;
std::unordered_set<void*> g_states;  // every PythonOpError::State alive
}  // namespace

PythonOpError::State::State() {
  std::lock_guard lock(g_states_mutex);
  g_states.insert(this);
}
PythonOpError::State::~State() {
  std::lock_guard lock(g_states_mutex);
  g_states.erase(this);
}

void PythonOpError::forget_unreported() {
  std::vector<PyObject*> dropped;
  {
    std::lock_guard lock(g_states_mutex);
    for (void* p : g_states) {
      auto* state = static_cast<State*>(p);
      for (PyRef* ref : {&state->exception, &state->type, &state->args}) {
        if (ref->get() != nullptr) dropped.push_back(ref->release());
      }
    }
  }
  // Outside the lock: a destructor run here may destroy another error.
  for (PyObject* object : dropped) Py_DECREF(object);
}

PythonOpError::PythonOpError(std::string what, PyObject* exception)
    : std::runtime_error(std::move(what)), state_(std::make_shared<State>()) {
  state_->exception = PyRef::steal(exception);
  if (exception != nullptr) {
    state_->type = PyRef(reinterpret_cast<PyObject*>(Py_TYPE(exception)));
    state_->args = PyRef::steal(PyObject_GetAttrString(exception, "args"));
    if (PyObject* text = PyObject_Str(exception)) {
      if (const char* s = PyUnicode_AsUTF8(text)) state_->message = s;
      Py_DECREF(text);
    }
    PyErr_Clear();
  }
}

namespace {

// The exception set in the interpreter, normalized, its traceback attached
// (a new reference), and clears it.
PyObject* take_raised_exception() {
#if PY_VERSION_HEX >= 0x030C0000
  return PyErr_GetRaisedException();
#else
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback != nullptr && value != nullptr) PyException_SetTraceback(value, traceback);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  return value;
#endif
}

}  // namespace

PythonOpError PythonOpError::fetch(std::string_view op_name) {
  PyObject* value = take_raised_exception();
  std::string what = "depengine: the Python function";
  if (!op_name.empty()) what += " '" + std::string(op_name) + "'";
  what += " raised ";
  what += value != nullptr ? Py_TYPE(value)->tp_name : "an exception";
  if (PyObject* text = value != nullptr ? PyObject_Str(value) : nullptr) {
    if (const char* s = PyUnicode_AsUTF8(text)) what += std::string(": ") + s;
    Py_DECREF(text);
  }
  PyErr_Clear();
  return PythonOpError(std::move(what), value);
}

void PythonOpError::restore() const {
  PyObject* value = state_->exception.get();
  if (value != nullptr) {
    // Python owns it now (see python_op.h): our reference goes to it.
    value = state_->exception.release();
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(value);
#else
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(value));
    Py_INCREF(type);
    PyErr_Restore(type, value, PyException_GetTraceback(value));
#endif
    return;
  }
  if (state_->type.get() != nullptr && state_->args.get() != nullptr && PyTuple_Check(state_->args.get())) {
    PyErr_SetObject(state_->type.get(), state_->args.get());  // type(*args)
    return;
  }
  PyErr_SetString(PyExc_RuntimeError, what());
}

namespace {

// Gives a thread the interpreter did not start (an engine worker, a stream)
// a Python thread state of its own, once: PyGILState_Ensure would otherwise
// make and free one, with its frame stack, on every call. It is never freed
// (a thread may end while the interpreter finalizes, when taking the GIL to
// free it is not allowed); the interpreter frees it when it ends.
void keep_thread_state() {
  thread_local bool t_done = false;
  if (t_done) return;
  if (PyGILState_GetThisThreadState() == nullptr) {
    // Starts with a PyGILState count of 1: PyGILState_Release keeps it.
    PyThreadState_New(PyInterpreterState_Main());
  }
  t_done = true;
}

// The closure of a pushed Python function: one pointer, so it is stored
// inline in the operation.
class PythonCall {
 public:
  PythonCall(PyObject* fn, bool reusable) : fn_(fn), reusable_(reusable) {}
  PythonCall(PythonCall&& other) noexcept = default;
  PythonCall& operator=(PythonCall&&) = delete;
  ~PythonCall() {
    if (counted_) leave_python_op();
  }

  void operator()(RunContext& ctx) {
    if (!python_alive()) throw std::runtime_error("depengine: the interpreter has shut down");
    keep_thread_state();
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject* result = PyObject_CallNoArgs(fn_.get());
    if (!reusable_) fn_.reset();  // released now, with the GIL
    if (result == nullptr) {
      PythonOpError error = PythonOpError::fetch(ctx.name);
      PyGILState_Release(gil);
      throw error;
    }
    Py_DECREF(result);
    release_queued_refs();
    PyGILState_Release(gil);
  }

 private:
  PyRef fn_;
  bool reusable_;
  struct Counted {
    Counted() = default;
    Counted(Counted&& other) noexcept : value(other.value) { other.value = false; }
    bool value = true;
    operator bool() const { return value; }
  } counted_;
};

}  // namespace

OpFn python_op(PyObject* fn, bool reusable) {
  if (!try_enter_python_op()) {
    throw std::runtime_error("depengine: the interpreter is shutting down; Python functions can no longer be pushed");
  }
  return OpFn(PythonCall(fn, reusable));
}

}  // namespace depengine::python
