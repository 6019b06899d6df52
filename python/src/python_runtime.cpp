#include "python/src/python_runtime.h"

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "python/src/engine_handle.h"
#include "python/src/python_op.h"

namespace depengine::python {

namespace {

std::atomic<bool> g_alive{true};
// Set by Py_AtExit, at the very end of the interpreter's finalization.
std::atomic<bool> g_interpreter_gone{false};
std::atomic<bool> g_shutting_down{false};
std::atomic<int> g_python_ops{0};
std::atomic<int> g_gil_released{0};  // threads inside a ReleaseGil

// References dropped by threads without the GIL.
std::mutex g_queue_mutex;
std::vector<PyObject*> g_queue;
std::atomic<bool> g_queue_nonempty{false};

}  // namespace

bool python_alive() { return g_alive.load(std::memory_order_acquire); }

PyThreadState* ReleaseGil::begin() {
  // Counted before the check, as for try_enter_python_op.
  g_gil_released.fetch_add(1, std::memory_order_seq_cst);
  if (!g_alive.load(std::memory_order_seq_cst)) {
    g_gil_released.fetch_sub(1, std::memory_order_seq_cst);
    return nullptr;
  }
  return PyEval_SaveThread();
}

void ReleaseGil::end(PyThreadState* saved) {
  PyEval_RestoreThread(saved);
  g_gil_released.fetch_sub(1, std::memory_order_seq_cst);
}
bool shutting_down() { return g_shutting_down.load(std::memory_order_acquire); }

void release_ref(PyObject* object) {
  if (object == nullptr) return;
  if (g_interpreter_gone.load(std::memory_order_acquire)) return;  // nothing left to release into
  if (PyGILState_Check()) {
    Py_DECREF(object);
    return;
  }
  std::lock_guard lock(g_queue_mutex);
  g_queue.push_back(object);
  g_queue_nonempty.store(true, std::memory_order_release);
}

void release_queued_refs() {
  if (!g_queue_nonempty.load(std::memory_order_acquire)) return;
  std::vector<PyObject*> dropped;
  {
    std::lock_guard lock(g_queue_mutex);
    dropped.swap(g_queue);
    g_queue_nonempty.store(false, std::memory_order_release);
  }
  // A destructor run here may queue more; they wait for the next call.
  for (PyObject* object : dropped) Py_DECREF(object);
}

bool try_enter_python_op() {
  // Counted before the check, so that shutdown, which sets the flag and then
  // waits for the count to reach zero, cannot miss a push in progress.
  g_python_ops.fetch_add(1, std::memory_order_seq_cst);
  if (g_shutting_down.load(std::memory_order_seq_cst)) {
    g_python_ops.fetch_sub(1, std::memory_order_seq_cst);
    return false;
  }
  return true;
}
void leave_python_op() { g_python_ops.fetch_sub(1, std::memory_order_seq_cst); }
int python_ops_alive() { return g_python_ops.load(std::memory_order_seq_cst); }

void on_interpreter_gone() { g_interpreter_gone.store(true, std::memory_order_release); }

void shutdown() {
  g_shutting_down.store(true, std::memory_order_seq_cst);
  {
    // Pushed Python functions need the GIL to run: wait without it.
    PyThreadState* saved = PyEval_SaveThread();
    // One round of wait_all on every engine runs every Python function
    // pushed before the flag was set. A push racing with the flag is counted
    // and caught by the next round; the rounds are bounded in case a
    // function's count outlives its engine's wait (it is dropped just after).
    for (int round = 0; round < 1000 && python_ops_alive() > 0; ++round) {
      for (const auto& handle : EngineHandle::live()) {
        try {
          handle->engine().wait_all();
        } catch (...) {
          // Errors nobody asked for are dropped at exit, as ~Engine does.
        }
      }
      if (python_ops_alive() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // From here on no thread releases the GIL; those that did take it back
    // before the interpreter goes on (bounded: a wait on a long native op
    // may still be running).
    g_alive.store(false, std::memory_order_seq_cst);
    for (int i = 0; i < 10'000 && g_gil_released.load(std::memory_order_seq_cst) > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    PyEval_RestoreThread(saved);
  }
  release_queued_refs();
  EngineHandle::drop_default();
  release_queued_refs();
  PythonOpError::forget_unreported();
}

}  // namespace depengine::python
