// The KVStore (depengine/kvstore.h): push a key's gradients, pull its
// aggregated value, on one process or the server shards of an mpirun job.
// Each call is pushed as engine operations and returns at once; a blocker
// on an output waits for its pull. Keys are ints or strs.
#include <nanobind/stl/string.h>

#include <optional>
#include <stdexcept>
#include <string>

#include <depengine/kvstore.h>

#include "python/src/bindings.h"
#include "python/src/convert.h"
#include "python/src/handles.h"
#include "python/src/python_op.h"

namespace depengine::python {

namespace {

struct PyKVStore {
  EngineRef engine;  // declared first: outlives the store
  std::optional<KVStore> store;

  PyKVStore(EngineRef e, KVStore s) : engine(std::move(e)), store(std::move(s)) {}
  PyKVStore(PyKVStore&&) = default;
  // Dropping a dist store waits for the other workers, whose pushes may
  // run this process's Python updater: wait without the GIL.
  ~PyKVStore() {
    ReleaseGil unlocked(store.has_value() && PyGILState_Check());
    store.reset();
  }
};

// Calls `call(int)` or `call(std::string)` for a key given as an int or a str.
template <class Call>
void with_key(nb::handle key, const char* op, Call call) {
  if (nb::isinstance<nb::str>(key)) {
    std::string name = nb::cast<std::string>(key);
    ReleaseGil unlocked;
    call(std::string_view(name));
    return;
  }
  if (!nb::isinstance<nb::int_>(key) || nb::isinstance<nb::bool_>(key)) {
    throw nb::type_error((std::string(op) + ": a key is an int or a str, not " + python_type_name(key)).c_str());
  }
  const int k = nb::cast<int>(key);
  ReleaseGil unlocked;
  call(k);
}

// `fn(key, merged, stored)` as the store's updater: it runs where the value
// is stored (on the pushing thread for local and device, on the shard's
// thread for the dist types), with the GIL taken. A dist shard's tensors
// belong to its own engine, which lives with the store: they are valid
// during the call only, so an updater that keeps one fails the key (and the
// kept tensor is emptied). While the updater lives it counts as a pushed
// Python function, so that binding calls that may wait for it (a push held
// by back-pressure) release the GIL.
class PythonUpdaterFn {
 public:
  explicit PythonUpdaterFn(nb::handle fn) : fn_(fn.ptr()) {
    if (!try_enter_python_op()) throw std::runtime_error("depengine: the interpreter is shutting down");
  }
  PythonUpdaterFn(const PythonUpdaterFn&) = delete;
  PythonUpdaterFn& operator=(const PythonUpdaterFn&) = delete;
  ~PythonUpdaterFn() { leave_python_op(); }
  PyObject* get() const { return fn_.get(); }

 private:
  PyRef fn_;
};

KVUpdater python_updater(nb::handle fn, const EngineRef& engine) {
  if (!PyCallable_Check(fn.ptr())) {
    throw nb::type_error(("set_updater: the updater must be callable, not " + python_type_name(fn)).c_str());
  }
  auto callable = std::make_shared<PythonUpdaterFn>(fn);
  return [callable, engine](int key, const Tensor& merged, Tensor& stored) {
    if (!python_alive()) throw std::runtime_error("depengine: the interpreter has shut down");
    nb::gil_scoped_acquire gil;
    const bool of_store_engine = &merged.engine() == &engine->engine();
    const EngineRef owner = of_store_engine ? engine : EngineRef();
    nb::object m = nb::cast(PyTensor(owner, merged)), st = nb::cast(PyTensor(owner, stored));
    PyObject* result = PyObject_CallFunction(callable->get(), "iOO", key, m.ptr(), st.ptr());
    if (result == nullptr) throw PythonOpError::fetch("KVStore updater");
    Py_DECREF(result);
    if (!of_store_engine && (Py_REFCNT(m.ptr()) > 1 || Py_REFCNT(st.ptr()) > 1)) {
      nb::inst_ptr<PyTensor>(m)->tensor = Tensor();
      nb::inst_ptr<PyTensor>(st)->tensor = Tensor();
      throw std::runtime_error(
          "the Python updater kept `merged` or `stored`: on a dist store's shard they are valid during the call "
          "only");
    }
  };
}

}  // namespace

void bind_kvstore(nb::module_& m) {
  nb::class_<PyKVStore>(m, "KVStore",
                        "A key-value store of parameters: push gradients, pull the aggregated value. Types:\n"
                        "'local' and 'device' (one process), 'dist_sync' and 'dist_async' (every mpirun\n"
                        "process; server shards in the workers, or `servers` dedicated processes).\n"
                        "See docs/distributed.md.")
      .def_static(
          "create",
          [](const std::string& type, nb::handle engine, int servers, int shards, std::size_t part_bytes,
             nb::handle updater) {
            EngineRef ref = engine_or_default(engine);
            KVStoreOptions options;
            options.servers = servers;
            options.shards = shards;
            options.part_bytes = part_bytes;
            if (!updater.is_none()) options.updater = python_updater(updater, ref);
            ReleaseGil unlocked;  // collective for the dist types; a server serves here until the workers are done
            KVStore store = KVStore::create(ref->engine(), type, options);
            return PyKVStore{std::move(ref), std::move(store)};
          },
          nb::arg("type"), nb::kw_only(), nb::arg("engine").none() = nb::none(), nb::arg("servers") = 0,
          nb::arg("shards") = 0, nb::arg("part_bytes") = KVStoreOptions{}.part_bytes,
          nb::arg("updater").none() = nb::none(),
          "A store of `type`. The dist types are collective: every process calls create. `updater`: as\n"
          "set_updater, on every process (dedicated servers take theirs only here).")
      .def_static(
          "key_of", [](const std::string& name) { return KVStore::key_of(name); }, nb::arg("name"),
          "The int key that the str key `name` stands for (the updater gets it).")
      .def(
          "init",
          [](PyKVStore& s, nb::handle key, nb::handle value) {
            std::vector<Tensor> v = tensors_of(value, "init", "the value", s.engine);
            if (v.size() != 1) throw nb::value_error("init: give one Tensor as the value");
            with_key(key, "init", [&](auto k) { s.store->init(k, v[0]); });
          },
          nb::arg("key"), nb::arg("value"), "Stores `value` under `key`; with several processes process 0's wins.")
      .def(
          "push",
          [](PyKVStore& s, nb::handle key, nb::handle values, int priority) {
            std::vector<Tensor> v = tensors_of(values, "push", "values", s.engine);
            with_key(key, "push", [&](auto k) { s.store->push(k, std::move(v), priority); });
          },
          nb::arg("key"), nb::arg("values"), nb::kw_only(), nb::arg("priority") = 0,
          "Pushes the key's local values (one per device), summed before they leave the process.")
      .def(
          "pull",
          [](PyKVStore& s, nb::handle key, nb::handle outs, int priority) {
            std::vector<Tensor> o = tensors_of(outs, "pull", "outputs", s.engine);
            with_key(key, "pull", [&](auto k) { s.store->pull(k, std::move(o), priority); });
          },
          nb::arg("key"), nb::arg("outs"), nb::kw_only(), nb::arg("priority") = 0,
          "Copies the key's value into every output.")
      .def(
          "pushpull",
          [](PyKVStore& s, nb::handle key, nb::handle values, nb::handle outs, int priority) {
            std::vector<Tensor> v = tensors_of(values, "pushpull", "values", s.engine);
            std::vector<Tensor> o = tensors_of(outs, "pushpull", "outputs", s.engine);
            with_key(key, "pushpull", [&](auto k) { s.store->pushpull(k, std::move(v), std::move(o), priority); });
          },
          nb::arg("key"), nb::arg("values"), nb::arg("outs"), nb::kw_only(), nb::arg("priority") = 0,
          "push, then pull.")
      .def(
          "set_updater",
          [](PyKVStore& s, nb::handle fn) {
            KVUpdater updater = python_updater(fn, s.engine);
            ReleaseGil unlocked;
            s.store->set_updater(std::move(updater));
          },
          nb::arg("fn"),
          "fn(key, merged, stored), run where the value is stored on the sum of the pushes, with the GIL\n"
          "taken: it pushes ops that update `stored` (e.g. depengine.axpy(-0.1, merged, stored)).\n"
          "`key` is the int key (KVStore.key_of for a str key). Raises RuntimeError on a worker whose values\n"
          "are on dedicated servers (give those `updater` in create).")
      .def(
          "set_optimizer",
          [](PyKVStore& s, double learning_rate, double momentum, double weight_decay, double rescale_grad) {
            s.store->set_optimizer({.learning_rate = learning_rate,
                                   .momentum = momentum,
                                   .weight_decay = weight_decay,
                                   .rescale_grad = rescale_grad});
          },
          nb::kw_only(), nb::arg("learning_rate") = 0.01, nb::arg("momentum") = 0.0, nb::arg("weight_decay") = 0.0,
          nb::arg("rescale_grad") = 1.0, "SGD with momentum and weight decay where the values are stored.")
      .def_prop_ro("type", [](const PyKVStore& s) { return s.store->type(); })
      .def_prop_ro("rank", [](const PyKVStore& s) { return s.store->rank(); })
      .def_prop_ro("num_workers", [](const PyKVStore& s) { return s.store->num_workers(); })
      .def_prop_ro("num_servers", [](const PyKVStore& s) { return s.store->num_servers(); })
      .def_prop_ro("is_worker", [](const PyKVStore& s) { return s.store->is_worker(); })
      .def(
          "barrier",
          [](PyKVStore& s) {
            ReleaseGil unlocked;
            s.store->barrier();
          },
          "Blocks until every worker reached it.")
      .def("describe", [](const PyKVStore& s) { return s.store->describe(); })
      .def("__repr__", [](const PyKVStore& s) { return "KVStore(" + s.store->describe() + ")"; });
}

}  // namespace depengine::python
