// The KVStore (depengine/kvstore.h): push a key's gradients, pull its
// aggregated value, on one process or the server shards of an mpirun job.
// Each call is pushed as engine operations and returns at once; a blocker
// on an output waits for its pull.
#include <nanobind/stl/string.h>

#include <depengine/kvstore.h>

#include "python/src/bindings.h"
#include "python/src/convert.h"

namespace depengine::python {

namespace {

struct PyKVStore {
  EngineRef engine;  // declared first: outlives the store
  KVStore store;
};

}  // namespace

void bind_kvstore(nb::module_& m) {
  nb::class_<PyKVStore>(m, "KVStore",
                        "A key-value store of parameters: push gradients, pull the aggregated value. Types:\n"
                        "'local' and 'device' (one process), 'dist_sync' and 'dist_async' (every mpirun\n"
                        "process; server shards in the workers, or `servers` dedicated processes).\n"
                        "See docs/distributed.md.")
      .def_static(
          "create",
          [](const std::string& type, nb::handle engine, int servers, int shards, std::size_t part_bytes) {
            EngineRef ref = engine_or_default(engine);
            KVStoreOptions options;
            options.servers = servers;
            options.shards = shards;
            options.part_bytes = part_bytes;
            ReleaseGil unlocked;  // collective for the dist types; a server serves here until the workers are done
            KVStore store = KVStore::create(ref->engine(), type, options);
            return PyKVStore{std::move(ref), std::move(store)};
          },
          nb::arg("type"), nb::kw_only(), nb::arg("engine").none() = nb::none(), nb::arg("servers") = 0,
          nb::arg("shards") = 0, nb::arg("part_bytes") = KVStoreOptions{}.part_bytes,
          "A store of `type`. The dist types are collective: every process calls create.")
      .def(
          "init",
          [](PyKVStore& s, int key, nb::handle value) {
            std::vector<Tensor> v = tensors_of(value, "init", "the value", s.engine);
            if (v.size() != 1) throw nb::value_error("init: give one Tensor as the value");
            ReleaseGil unlocked;
            s.store.init(key, v[0]);
          },
          nb::arg("key"), nb::arg("value"), "Stores `value` under `key`; with several processes process 0's wins.")
      .def(
          "push",
          [](PyKVStore& s, int key, nb::handle values, int priority) {
            std::vector<Tensor> v = tensors_of(values, "push", "values", s.engine);
            ReleaseGil unlocked;
            s.store.push(key, std::move(v), priority);
          },
          nb::arg("key"), nb::arg("values"), nb::kw_only(), nb::arg("priority") = 0,
          "Pushes the key's local values (one per device), summed before they leave the process.")
      .def(
          "pull",
          [](PyKVStore& s, int key, nb::handle outs, int priority) {
            std::vector<Tensor> o = tensors_of(outs, "pull", "outputs", s.engine);
            ReleaseGil unlocked;
            s.store.pull(key, std::move(o), priority);
          },
          nb::arg("key"), nb::arg("outs"), nb::kw_only(), nb::arg("priority") = 0,
          "Copies the key's value into every output.")
      .def(
          "pushpull",
          [](PyKVStore& s, int key, nb::handle values, nb::handle outs, int priority) {
            std::vector<Tensor> v = tensors_of(values, "pushpull", "values", s.engine);
            std::vector<Tensor> o = tensors_of(outs, "pushpull", "outputs", s.engine);
            ReleaseGil unlocked;
            s.store.pushpull(key, std::move(v), std::move(o), priority);
          },
          nb::arg("key"), nb::arg("values"), nb::arg("outs"), nb::kw_only(), nb::arg("priority") = 0,
          "push, then pull.")
      .def(
          "set_optimizer",
          [](PyKVStore& s, double learning_rate, double momentum, double weight_decay, double rescale_grad) {
            s.store.set_optimizer({.learning_rate = learning_rate,
                                   .momentum = momentum,
                                   .weight_decay = weight_decay,
                                   .rescale_grad = rescale_grad});
          },
          nb::kw_only(), nb::arg("learning_rate") = 0.01, nb::arg("momentum") = 0.0, nb::arg("weight_decay") = 0.0,
          nb::arg("rescale_grad") = 1.0, "SGD with momentum and weight decay where the values are stored.")
      .def_prop_ro("type", [](const PyKVStore& s) { return s.store.type(); })
      .def_prop_ro("rank", [](const PyKVStore& s) { return s.store.rank(); })
      .def_prop_ro("num_workers", [](const PyKVStore& s) { return s.store.num_workers(); })
      .def_prop_ro("num_servers", [](const PyKVStore& s) { return s.store.num_servers(); })
      .def_prop_ro("is_worker", [](const PyKVStore& s) { return s.store.is_worker(); })
      .def(
          "barrier",
          [](PyKVStore& s) {
            ReleaseGil unlocked;
            s.store.barrier();
          },
          "Blocks until every worker reached it.")
      .def("describe", [](const PyKVStore& s) { return s.store.describe(); })
      .def("__repr__", [](const PyKVStore& s) { return "KVStore(" + s.store.describe() + ")"; });
}

}  // namespace depengine::python
