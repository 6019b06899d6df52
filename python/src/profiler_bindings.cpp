// The profiler (depengine/profiler.h); depengine/profiler.py wraps it as a
// context manager.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <depengine/profiler.h>

#include "python/src/bindings.h"
#include "python/src/convert.h"

namespace depengine::python {

namespace {

// Keeps the engine alive while a profiler may still attach to it.
struct PyProfiler {
  EngineRef engine;
  std::unique_ptr<Profiler> profiler;
};

StatsOrder parse_order(const std::string& order) {
  if (order == "total") return StatsOrder::total;
  if (order == "count") return StatsOrder::count;
  if (order == "mean") return StatsOrder::mean;
  if (order == "max") return StatsOrder::max;
  if (order == "name") return StatsOrder::name;
  throw nb::value_error(("sort_by must be 'total', 'count', 'mean', 'max' or 'name', not '" + order + "'").c_str());
}

}  // namespace

void bind_profiler(nb::module_& m) {
  nb::class_<OpStats>(m, "OpStats", "The operations of one name: how many, and their times in microseconds.")
      .def_ro("name", &OpStats::name)
      .def_ro("count", &OpStats::count)
      .def_ro("total_us", &OpStats::total_us)
      .def_ro("mean_us", &OpStats::mean_us)
      .def_ro("max_us", &OpStats::max_us)
      .def_ro("share", &OpStats::share, "total_us over the recorded wall time (parallel ops add up to more than 1)")
      .def("__repr__", [](const OpStats& s) {
        return "OpStats(name='" + s.name + "', count=" + std::to_string(s.count) +
               ", total_us=" + std::to_string(s.total_us) + ")";
      });

  nb::class_<ProfiledOp>(m, "ProfiledOp", "One operation that ran while the profiler recorded.")
      .def_ro("id", &ProfiledOp::id)
      .def_ro("name", &ProfiledOp::name)
      .def_ro("device", &ProfiledOp::device)
      .def_ro("track", &ProfiledOp::track)
      .def_ro("start_us", &ProfiledOp::start_us)
      .def_ro("duration_us", &ProfiledOp::duration_us)
      .def_ro("reads", &ProfiledOp::reads)
      .def_ro("writes", &ProfiledOp::writes)
      .def("__repr__", [](const ProfiledOp& op) {
        return "ProfiledOp(name='" + op.name + "', track='" + op.track + "', duration_us=" +
               std::to_string(op.duration_us) + ")";
      });

  nb::class_<PyProfiler>(m, "_Profiler")
      .def(
          "__init__",
          [](PyProfiler* self, nb::handle engine) {
            if (!Profiler::available()) {
              throw nb::value_error("this depengine was built with DEPENGINE_PROFILER_HOOKS=OFF: no profiler");
            }
            EngineRef ref = engine_or_default(engine);
            auto profiler = std::make_unique<Profiler>(ref->engine());
            new (self) PyProfiler{std::move(ref), std::move(profiler)};
          },
          nb::arg("engine").none() = nb::none())
      .def("start", [](PyProfiler& p) { p.profiler->start(); })
      .def("stop", [](PyProfiler& p) { p.profiler->stop(); })
      .def_prop_ro("running", [](const PyProfiler& p) { return p.profiler->running(); })
      .def("clear", [](PyProfiler& p) { p.profiler->clear(); })
      .def("ops", [](const PyProfiler& p) { return p.profiler->ops(); })
      .def_prop_ro("wall_us", [](const PyProfiler& p) { return p.profiler->wall_us(); })
      .def(
          "key_averages",
          [](const PyProfiler& p, const std::string& order) { return p.profiler->key_averages(parse_order(order)); },
          nb::arg("sort_by") = "total")
      .def(
          "table",
          [](const PyProfiler& p, const std::string& order, std::size_t rows) {
            return p.profiler->table(parse_order(order), rows);
          },
          nb::arg("sort_by") = "total", nb::arg("row_limit") = 0)
      .def("trace_json", [](const PyProfiler& p) { return p.profiler->trace_json(); })
      .def(
          "write_trace",
          [](const PyProfiler& p, const std::string& path) {
            ReleaseGil unlocked;
            p.profiler->write_trace(path);
          },
          nb::arg("path"));
}

}  // namespace depengine::python
