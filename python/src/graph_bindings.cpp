// Graph, Engine.capture and Engine.replay: a sequence of pushes recorded once
// and pushed again many times (include/depengine/graph.h).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <depengine/graph.h>

#include "python/src/bindings.h"
#include "python/src/convert.h"
#include "python/src/python_op.h"
#include "python/src/python_runtime.h"

namespace depengine::python {

namespace {

thread_local int t_capture_bodies = 0;

struct CaptureBody {
  CaptureBody() { ++t_capture_bodies; }
  ~CaptureBody() { --t_capture_bodies; }
};

/// A graph and its engine, which must outlive it.
struct PyGraph {
  EngineRef owner;  // declared first: destroyed after the graph
  Graph graph;

  PyGraph(EngineRef o, Graph g) : owner(std::move(o)), graph(std::move(g)) {}
  PyGraph(PyGraph&&) = default;
  ~PyGraph() {
    // The graph's deletions are pushed: they may wait for back-pressure.
    GilReleaseIfNeeded unlocked;
    graph = Graph();
  }
};

}  // namespace

bool in_capture_body() { return t_capture_bodies > 0; }

void bind_graph(nb::module_& m) {
  nb::class_<PyGraph>(m, "Graph",
                      "A sequence of pushes recorded once by Engine.capture and pushed again by Engine.replay.\n\n"
                      "Tensors and Vars made while capturing belong to it and are reused by every replay.")
      .def("__len__", [](const PyGraph& g) { return g.graph.size(); })
      .def_prop_ro("dependencies", [](const PyGraph& g) { return g.graph.dependencies(); },
                   "Number of dependencies among the recorded operations.")
      .def("to_dot", [](const PyGraph& g) { return g.graph.to_dot(); }, "The graph in Graphviz's dot language.")
      .def("__repr__", [](const PyGraph& g) {
        return "Graph(" + std::to_string(g.graph.size()) + " ops, " + std::to_string(g.graph.dependencies()) +
               " dependencies)";
      });

  nb::handle engine_class = nb::type<PyEngine>();
  engine_class.attr("capture") = nb::cpp_function(
      [](const PyEngine& e, nb::handle fn) {
        if (!PyCallable_Check(fn.ptr())) {
          throw nb::type_error(("capture: fn must be callable, not " + python_type_name(fn)).c_str());
        }
        release_queued_refs();
        // fn runs on this thread with the GIL; what it pushes on this
        // engine is recorded. A Python exception it raises goes on.
        Graph graph = e.engine().capture([&] {
          CaptureBody body;
          fn();
        });
        return PyGraph(e.ref, std::move(graph));
      },
      nb::is_method(), nb::arg("fn"),
      "Calls fn() with capture on: what it pushes on this engine from this thread (push, tensor ops,\n"
      "new_var) is recorded, not run, into the returned Graph. Blocking calls inside raise RuntimeError.");
  engine_class.attr("replay") = nb::cpp_function(
      [](const PyEngine& e, const PyGraph& g, int priority, std::optional<std::string> name) {
        if (g.owner != e.ref) throw nb::value_error("replay: the graph was captured on another engine");
        release_queued_refs();
        PushOptions options{.priority = priority};
        if (name) options.name = *name;
        ReleaseGil unlocked;
        e.engine().replay(g.graph, options);
      },
      nb::is_method(), nb::arg("graph"), nb::kw_only(), nb::arg("priority") = 0, nb::arg("name").none() = nb::none(),
      "Pushes the graph's operations again, in their recorded order; returns at once.");
}

}  // namespace depengine::python
