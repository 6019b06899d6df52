// Engine, Var, push of Python functions, the blocking calls.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <depengine/emulated_device.h>

#include "python/src/bindings.h"
#include "python/src/convert.h"
#include "python/src/python_op.h"

namespace depengine::python {

namespace {

const char* kind_name(EngineKind kind) { return kind == EngineKind::Naive ? "naive" : "threaded"; }

Var var_of(nb::handle x, const char* call) {
  if (nb::isinstance<PyVar>(x)) {
    const PyVar& v = nb::cast<const PyVar&>(x);
    if (v.deleted) throw nb::value_error((std::string(call) + ": the variable '" + v.name + "' was deleted").c_str());
    return v.var;
  }
  if (nb::isinstance<PyTensor>(x)) return nb::cast<const PyTensor&>(x).tensor.var();
  throw nb::type_error((std::string(call) + ": expected a Var or a Tensor, not " + python_type_name(x)).c_str());
}

void wait_all_engines() {
  for (const EngineRef& handle : EngineHandle::live()) {
    ReleaseGil unlocked;
    handle->engine().wait_all();
  }
  release_queued_refs();
}

}  // namespace

void bind_engine(nb::module_& m) {
  nb::class_<PyVar>(m, "Var",
                    "A variable: a piece of state that operations declare they read or write.\n\n"
                    "Made by Engine.new_var; deleted (as an operation, after everything pushed on it)\n"
                    "when the object goes or by Engine.delete_var. Tensor.var is owned by its tensor.")
      .def_prop_ro("name", [](const PyVar& v) { return v.name; })
      .def_prop_ro("deleted", [](const PyVar& v) { return v.deleted; })
      .def("__repr__", [](const PyVar& v) {
        return "Var('" + v.name + "'" + (v.deleted ? ", deleted" : "") + ")";
      })
      .def("__eq__", [](const PyVar& a, nb::handle b) {
        return nb::isinstance<PyVar>(b) && nb::cast<const PyVar&>(b).var == a.var;
      })
      .def("__hash__", [](const PyVar& v) {
        return static_cast<std::int64_t>((std::uint64_t(v.var.engine_id()) << 48) ^ (std::uint64_t(v.var.slot()) << 20) ^
                                         v.var.generation());
      });

  nb::class_<PyEngine>(m, "Engine",
                       "An asynchronous engine: push operations that declare what they read and write;\n"
                       "independent ones run at the same time on the engine's worker threads.")
      .def(
          "__init__",
          [](PyEngine* self, int cpu_threads, const std::string& kind, std::size_t max_ops_in_flight,
             bool batch_pushes, bool read_environment) {
            EngineOptions options;
            if (kind == "threaded") options.kind = EngineKind::Threaded;
            else if (kind == "naive") options.kind = EngineKind::Naive;
            else throw nb::value_error(("Engine: kind must be 'threaded' or 'naive', not '" + kind + "'").c_str());
            if (cpu_threads < 0) throw nb::value_error("Engine: cpu_threads must be >= 0 (0: one per core)");
            if (max_ops_in_flight == 0) throw nb::value_error("Engine: max_ops_in_flight must be >= 1");
            options.cpu_threads = cpu_threads;
            options.max_ops_in_flight = max_ops_in_flight;
            options.batch_pushes = batch_pushes;
            options.read_environment = read_environment;
            new (self) PyEngine{make_engine(options)};
          },
          nb::arg("cpu_threads") = 0, nb::arg("kind") = "threaded", nb::arg("max_ops_in_flight") = 1u << 16,
          nb::arg("batch_pushes") = true, nb::arg("read_environment") = true)
      .def_prop_ro("kind", [](const PyEngine& e) { return kind_name(e.engine().kind()); })
      .def_prop_ro("cpu_threads", [](const PyEngine& e) { return e.engine().cpu_threads(); })
      .def(
          "new_var",
          [](const PyEngine& e, const std::string& name) {
            return PyVar(e.ref, e.engine().new_var(name), name, true);
          },
          nb::arg("name") = "", "A new variable; the name shows in errors and the profiler.")
      .def(
          "delete_var",
          [](const PyEngine& e, PyVar& v) {
            if (!v.owned) throw nb::value_error("delete_var: a tensor's variable is deleted with its tensor");
            if (v.deleted) throw nb::value_error(("delete_var: the variable '" + v.name + "' was already deleted").c_str());
            if (v.owner != e.ref) throw nb::value_error("delete_var: the variable belongs to another engine");
            v.deleted = true;
            GilReleaseIfNeeded unlocked;
            e.engine().delete_var(v.var);
          },
          nb::arg("var"), "Deletes the variable once every operation pushed on it before has run.")
      .def(
          "push",
          [](const PyEngine& e, nb::handle fn, nb::handle reads, nb::handle writes, int priority,
             std::optional<std::string> name, nb::handle device, std::size_t bytes) {
            if (!PyCallable_Check(fn.ptr())) {
              throw nb::type_error(("push: fn must be callable, not " + python_type_name(fn)).c_str());
            }
            release_queued_refs();
            const std::vector<Var> read_vars = parse_vars(reads, "reads");
            const std::vector<Var> write_vars = parse_vars(writes, "writes");
            PushOptions options{.priority = priority, .device = parse_device(device), .bytes = bytes};
            if (name) options.name = *name;
            OpFn op = python_op(fn.ptr(), in_capture_body());
            ReleaseGil unlocked;
            e.engine().push(std::move(op), read_vars, write_vars, options);
          },
          nb::arg("fn"), nb::arg("reads").none() = nb::none(), nb::arg("writes").none() = nb::none(), nb::kw_only(),
          nb::arg("priority") = 0, nb::arg("name").none() = nb::none(), nb::arg("device") = "cpu",
          nb::arg("bytes") = 0,
          "Pushes fn() to run on a worker once the operations it depends on have run.\n\n"
          "reads/writes: Vars or Tensors. Returns at once. An exception fn raises fails the\n"
          "variables it writes and is raised again by the blocking call that covers them.\n"
          "bytes: how much data fn reads and writes, a hint for the CPU workers.")
      .def(
          "wait_to_read",
          [](const PyEngine& e, nb::handle x) {
            const Var v = var_of(x, "wait_to_read");
            {
              ReleaseGil unlocked;
              e.engine().wait_to_read(v);
            }
            release_queued_refs();
          },
          nb::arg("x"), "Blocks until every write to x pushed before has run; raises its error.")
      .def(
          "wait_to_write",
          [](const PyEngine& e, nb::handle x) {
            const Var v = var_of(x, "wait_to_write");
            {
              ReleaseGil unlocked;
              e.engine().wait_to_write(v);
            }
            release_queued_refs();
          },
          nb::arg("x"), "Blocks until every read and write of x pushed before has run.")
      .def(
          "wait_all",
          [](const PyEngine& e) {
            {
              ReleaseGil unlocked;
              e.engine().wait_all();
            }
            release_queued_refs();
          },
          "Blocks until every operation pushed before has run; raises the first unreported error.")
      .def(
          "add_emulated_device",
          [](const PyEngine& e, int index, int compute_streams, double latency_us) {
            if (latency_us < 0) throw nb::value_error("add_emulated_device: latency_us must be >= 0");
            EmulatedDeviceOptions options;
            options.compute_streams = compute_streams;
            options.latency = std::chrono::microseconds(static_cast<std::int64_t>(latency_us));
            add_emulated_device(e.engine(), index, std::move(options));
          },
          nb::arg("index"), nb::arg("compute_streams") = 2, nb::arg("latency_us") = 0.0,
          "Adds the device 'emulated:<index>': CUDA-like streams run by host threads.")
      .def(
          "has_device", [](const PyEngine& e, nb::handle device) { return e.engine().has_device(parse_device(device)); },
          nb::arg("device"))
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def(
          "__exit__",
          [](const PyEngine& e, nb::handle type, nb::handle, nb::handle) {
            // On an exception already propagating, waiting still happens, but
            // an operation's error must not replace it.
            ReleaseGil unlocked;
            if (type.ptr() == Py_None) {
              e.engine().wait_all();
            } else {
              try {
                e.engine().wait_all();
              } catch (...) {
              }
            }
          },
          nb::arg("exc_type").none(), nb::arg("exc_value").none(), nb::arg("traceback").none())
      .def("__eq__", [](const PyEngine& a, nb::handle b) {
        return nb::isinstance<PyEngine>(b) && nb::cast<const PyEngine&>(b).ref == a.ref;
      })
      .def("__hash__", [](const PyEngine& e) { return reinterpret_cast<std::intptr_t>(e.ref.get()); })
      .def("__repr__", [](const PyEngine& e) {
        return std::string("Engine(kind='") + kind_name(e.engine().kind()) +
               "', cpu_threads=" + std::to_string(e.engine().cpu_threads()) + ")";
      });

  m.def(
      "default_engine", [] { return PyEngine{EngineHandle::default_engine()}; },
      "The process-wide engine that tensors use unless given engine=.");
  m.def("wait_all", &wait_all_engines, "Blocks until every operation pushed on every engine has run.");
}

}  // namespace depengine::python
