// The extension module `depengine._depengine`; the package `depengine`
// (python/depengine/__init__.py) re-exports it.
#include <nanobind/nanobind.h>

#include "python/src/bindings.h"
#include "python/src/python_op.h"
#include "python/src/python_runtime.h"

namespace nb = nanobind;
using namespace depengine::python;

NB_MODULE(_depengine, m) {
  m.doc() = "depengine: an asynchronous dependency engine; NumPy in, asynchronous ops out.";

  // A Python function's exception comes back as itself, with its traceback.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const PythonOpError& e) {
      e.restore();
    }
  });

  bind_engine(m);
  nb::class_<PyTensor> tensor_class = bind_tensor(m);
  bind_ops(m);
  bind_dlpack(m, tensor_class);
  bind_profiler(m);
  bind_comm(m);
  bind_kvstore(m);
  bind_graph(m);

  // Runs before the interpreter tears down: every pushed Python function
  // runs while Python can still run it (see python_runtime.h).
  m.def("_shutdown", &shutdown);
  nb::module_::import_("atexit").attr("register")(m.attr("_shutdown"));
  Py_AtExit(&on_interpreter_gone);
}
