// The communicator (depengine/comm.h): collectives over the processes of an
// mpirun job (or this process alone), pushed as engine operations like any
// other op: they return at once, and a blocker on a tensor waits for them.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <depengine/comm.h>

#include "python/src/bindings.h"
#include "python/src/convert.h"

namespace depengine::python {

namespace {

struct PyCommunicator {
  EngineRef engine;  // declared first: outlives the communicator
  Communicator comm;
};

ReduceOp parse_reduce_op(const std::string& op, const char* call) {
  if (op == "sum") return ReduceOp::sum;
  if (op == "mean") return ReduceOp::mean;
  throw nb::value_error((std::string(call) + ": op must be 'sum' or 'mean', not '" + op + "'").c_str());
}

PushOptions options_of(int priority, const std::optional<std::string>& name) {
  PushOptions options{.priority = priority};
  if (name) options.name = *name;
  return options;
}

}  // namespace

void bind_comm(nb::module_& m) {
  nb::class_<PyCommunicator>(m, "Communicator",
                             "A group of processes (every process of an mpirun job, or this one alone) and the\n"
                             "collectives between their tensors. Each collective is pushed as an engine operation\n"
                             "on its tensors and returns at once; every process must push the same collectives\n"
                             "in the same order (docs/distributed.md).")
      .def_static(
          "world",
          [](nb::handle engine) {
            EngineRef ref = engine_or_default(engine);
            ReleaseGil unlocked;  // collective: waits for the other processes
            Communicator comm = Communicator::world(ref->engine());
            return PyCommunicator{std::move(ref), std::move(comm)};
          },
          nb::kw_only(), nb::arg("engine").none() = nb::none(),
          "Every process started by mpirun, or this process alone. Collective: every process calls it.")
      .def_prop_ro("process_rank", [](const PyCommunicator& c) { return c.comm.process_rank(); })
      .def_prop_ro("process_count", [](const PyCommunicator& c) { return c.comm.process_count(); })
      .def("describe", [](const PyCommunicator& c) { return c.comm.describe(); })
      .def("__repr__", [](const PyCommunicator& c) { return "Communicator(" + c.comm.describe() + ")"; })
      .def(
          "allreduce",
          [](PyCommunicator& c, nb::handle tensors, const std::string& op, int priority,
             std::optional<std::string> name) {
            std::vector<Tensor> ts = tensors_of(tensors, "allreduce", "tensors", c.engine);
            const ReduceOp reduce = parse_reduce_op(op, "allreduce");
            ReleaseGil unlocked;
            c.comm.allreduce(std::move(ts), reduce, options_of(priority, name));
          },
          nb::arg("tensors"), nb::arg("op") = "sum", nb::kw_only(), nb::arg("priority") = 0,
          nb::arg("name").none() = nb::none(),
          "In place: afterwards every tensor, of every process, holds the sum (or mean) over all of them.")
      .def(
          "broadcast",
          [](PyCommunicator& c, nb::handle tensors, int root, int priority, std::optional<std::string> name) {
            std::vector<Tensor> ts = tensors_of(tensors, "broadcast", "tensors", c.engine);
            ReleaseGil unlocked;
            c.comm.broadcast(std::move(ts), root, options_of(priority, name));
          },
          nb::arg("tensors"), nb::arg("root") = 0, nb::kw_only(), nb::arg("priority") = 0,
          nb::arg("name").none() = nb::none(), "Every tensor gets the value of local tensor 0 of process `root`.")
      .def(
          "allgather",
          [](PyCommunicator& c, nb::handle inputs, nb::handle outputs, int priority, std::optional<std::string> name) {
            std::vector<Tensor> in = tensors_of(inputs, "allgather", "inputs", c.engine);
            std::vector<Tensor> out = tensors_of(outputs, "allgather", "outputs", c.engine);
            ReleaseGil unlocked;
            c.comm.allgather(std::move(in), std::move(out), options_of(priority, name));
          },
          nb::arg("inputs"), nb::arg("outputs"), nb::kw_only(), nb::arg("priority") = 0,
          nb::arg("name").none() = nb::none(), "Each output gets every rank's input, concatenated in rank order.")
      .def(
          "reduce_scatter",
          [](PyCommunicator& c, nb::handle inputs, nb::handle outputs, const std::string& op, int priority,
             std::optional<std::string> name) {
            std::vector<Tensor> in = tensors_of(inputs, "reduce_scatter", "inputs", c.engine);
            std::vector<Tensor> out = tensors_of(outputs, "reduce_scatter", "outputs", c.engine);
            const ReduceOp reduce = parse_reduce_op(op, "reduce_scatter");
            ReleaseGil unlocked;
            c.comm.reduce_scatter(std::move(in), std::move(out), reduce, options_of(priority, name));
          },
          nb::arg("inputs"), nb::arg("outputs"), nb::arg("op") = "sum", nb::kw_only(), nb::arg("priority") = 0,
          nb::arg("name").none() = nb::none(), "Output of rank r gets block r of the inputs, reduced over every rank.")
      .def(
          "barrier",
          [](PyCommunicator& c) {
            ReleaseGil unlocked;
            c.comm.barrier();
          },
          "Blocks until every process reached it (a blocker); raises a communication failure.");
}

}  // namespace depengine::python
