// Tensor: creation from NumPy and by value, the blockers that read it back,
// and Python's operators.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <atomic>
#include <cstring>

#include <depengine/ops.h>

#include "python/src/bindings.h"
#include "python/src/convert.h"
#include "python/src/tensor_io.h"
#include "python/src/tensor_ops.h"

namespace depengine::python {

namespace {

// Seeds for uniform/normal without seed=: a counter, so that a program gives
// the same values on every run (depengine.seed resets it).
std::atomic<std::uint64_t> g_next_seed{0x5eed};
std::uint64_t next_seed(std::optional<std::uint64_t> seed) {
  return seed ? *seed : g_next_seed.fetch_add(1, std::memory_order_relaxed);
}

// uniform() and normal(): the tensor `make` fills from the seed, with the
// arguments parsed and the GIL released around the push.
template <class Make>
PyTensor random_tensor(nb::handle shape, std::optional<std::uint64_t> seed, nb::handle dtype, nb::handle device,
                       nb::handle engine, Make&& make) {
  const EngineRef ref = engine_or_default(engine);
  Shape s = parse_shape(shape);
  const DType t = parse_dtype(dtype);
  const Device d = parse_device(device);
  GilReleaseIfNeeded unlocked;
  return PyTensor(ref, make(ref->engine(), std::move(s), next_seed(seed), t, d));
}

const Tensor& defined(const PyTensor& t) {
  if (!t.tensor.defined()) throw nb::value_error("null tensor");
  return t.tensor;
}

// Reads a tensor's bytes into `dst` (nbytes of the host dtype), after the
// writes pushed before. Call without the GIL.
void read_back(const Tensor& t, void* dst) {
  const Tensor host = t.device().is_cpu() ? t : t.copy_to(Device::cpu());
  try {
    t.engine().wait_to_read(host.var());
  } catch (...) {
    // The copy failed because the tensor did: report the error on the tensor
    // too, so that its next blocker does not raise it again.
    if (host.var() != t.var()) {
      try {
        t.engine().wait_to_read(t.var());
      } catch (...) {
      }
    }
    throw;
  }
  std::memcpy(dst, host.data(), host.nbytes());
}

struct Buffer {
  Py_buffer view{};
  Buffer(nb::handle array, int flags) {
    if (PyObject_GetBuffer(array.ptr(), &view, flags) != 0) throw nb::python_error();
  }
  ~Buffer() { PyBuffer_Release(&view); }
};

nb::object numpy() { return nb::module_::import_("numpy"); }

}  // namespace

nb::object to_numpy(const PyTensor& t) {
  Tensor source = defined(t);
  if (source.dtype() == DType::bfloat16) {
    // NumPy has no bfloat16: the values come back as float32.
    GilReleaseIfNeeded unlocked;
    source = ops::cast(source, DType::float32);
  }
  nb::object array = numpy().attr("empty")(shape_tuple(source.shape()), numpy_dtype_name(source.dtype()));
  {
    Buffer buffer(array, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS);
    ReleaseGil unlocked;
    read_back(source, buffer.view.buf);
  }
  release_queued_refs();
  return array;
}

/// A tensor holding a copy of a C-contiguous buffer of `dtype`.
PyTensor from_buffer(const EngineRef& engine, const void* data, Shape shape, DType dtype, Device device) {
  // A fresh CPU tensor has no operation pending: it may be written directly.
  Tensor host = Tensor::empty(engine->engine(), std::move(shape), dtype, Device::cpu());
  std::memcpy(host.data(), data, host.nbytes());
  if (device.is_cpu()) return PyTensor(engine, std::move(host));
  GilReleaseIfNeeded unlocked;
  return PyTensor(engine, host.copy_to(device));
}

namespace {

PyTensor array_from(nb::handle data, nb::handle dtype, nb::handle device, nb::handle engine) {
  const EngineRef ref = engine_or_default(engine);
  const Device dev = parse_device(device);
  nb::object np = numpy();
  const bool is_array = nb::isinstance(data, np.attr("ndarray"));
  std::optional<DType> wanted;
  if (!dtype.is_none()) wanted = parse_dtype(dtype);
  nb::object array;
  if (wanted && *wanted == DType::bfloat16) {
    array = np.attr("asarray")(data, "float32");
  } else if (wanted) {
    array = np.attr("asarray")(data, numpy_dtype_name(*wanted));
  } else {
    array = np.attr("asarray")(data);
    if (!is_array) {
      // Python numbers and lists: the engine's usual dtypes, not NumPy's 64-bit ones.
      const std::string kind = nb::cast<std::string>(array.attr("dtype").attr("kind"));
      if (kind == "f") array = array.attr("astype")("float32");
      else if (kind == "i" || kind == "u" || kind == "b") array = array.attr("astype")("int32");
    }
  }
  const std::string name = nb::cast<std::string>(array.attr("dtype").attr("name"));
  DType got;
  if (name == "float32") got = DType::float32;
  else if (name == "float64") got = DType::float64;
  else if (name == "float16") got = DType::float16;
  else if (name == "int32") got = DType::int32;
  else {
    throw nb::type_error(("array: unsupported NumPy dtype '" + name +
                          "' (depengine holds float32, float64, float16, bfloat16 and int32; convert with .astype)")
                             .c_str());
  }
  // Strided views (a transpose, a slice with a step) are copied into order.
  // (np.ascontiguousarray would turn a 0-d array into a 1-d one.)
  if (!nb::cast<bool>(array.attr("flags").attr("c_contiguous"))) array = array.attr("copy")("C");
  Shape shape;
  for (nb::handle d : array.attr("shape")) shape.push_back(nb::cast<std::int64_t>(d));
  Buffer buffer(array, PyBUF_C_CONTIGUOUS);
  PyTensor t = from_buffer(ref, buffer.view.buf, std::move(shape), got, dev);
  if (wanted && *wanted == DType::bfloat16) return cast_op(t, DType::bfloat16);
  return t;
}

nb::object scalar_value(const PyTensor& t) {
  const Tensor& x = defined(t);
  if (x.numel() != 1) {
    throw nb::value_error(("item: " + x.describe() + " does not have exactly one element").c_str());
  }
  if (x.dtype() == DType::int32) {
    std::int32_t v;
    {
      ReleaseGil unlocked;
      v = x.item<std::int32_t>();
    }
    return nb::int_(v);
  }
  double v;
  {
    ReleaseGil unlocked;
    v = x.item<double>();
  }
  return nb::float_(v);
}

std::string repr(const PyTensor& t) {
  if (!t.tensor.defined()) return "tensor(null)";
  nb::object values = to_numpy(t);
  nb::object text = numpy().attr("array2string")(values, nb::arg("separator") = ", ", nb::arg("prefix") = "tensor(");
  return "tensor(" + nb::cast<std::string>(text) + ", dtype=" + std::string(dtype_name(t.tensor.dtype())) +
         ", device=" + t.tensor.device().to_string() + ")";
}

nb::object binary_operator(Binary op, const PyTensor& a, nb::handle b) {
  if (!nb::isinstance<PyTensor>(b) && !number_value(b)) return nb::borrow(Py_NotImplemented);
  return nb::cast(binary_op(op, a, b, nullptr));
}

nb::object inplace_operator(Binary op, nb::handle self, nb::handle b) {
  const PyTensor& a = nb::cast<const PyTensor&>(self);
  if (!nb::isinstance<PyTensor>(b) && !number_value(b)) return nb::borrow(Py_NotImplemented);
  binary_op(op, a, b, &a);
  return nb::borrow(self);
}

}  // namespace

nb::class_<PyTensor> bind_tensor(nb::module_& m) {
  nb::class_<PyTensor> cls(m, "Tensor",
                           "An n-dimensional array on one device, guarded by one engine variable.\n\n"
                           "Operations on it are pushed and return at once; asnumpy(), item(), float(),\n"
                           "repr() and print() are the blockers that wait for its pending writes.");
  cls.def_prop_ro("shape", [](const PyTensor& t) { return shape_tuple(defined(t).shape()); })
      .def_prop_ro("dtype", [](const PyTensor& t) { return std::string(dtype_name(defined(t).dtype())); },
                   "The element type's name: 'float32', 'float64', 'float16', 'bfloat16' or 'int32'.")
      .def_prop_ro("device", [](const PyTensor& t) { return defined(t).device().to_string(); })
      .def_prop_ro("ndim", [](const PyTensor& t) { return defined(t).rank(); })
      .def_prop_ro("size", [](const PyTensor& t) { return defined(t).numel(); })
      .def_prop_ro("nbytes", [](const PyTensor& t) { return defined(t).nbytes(); })
      .def_prop_ro("engine", [](const PyTensor& t) { return PyEngine{t.owner}; })
      .def_prop_ro("var", [](const PyTensor& t) {
        return PyVar(t.owner, defined(t).var(), "tensor", false);
      }, "The variable that orders the operations on this tensor (owned by the tensor).")
      .def("asnumpy", &to_numpy, "Blocks for the pending writes, then returns a NumPy copy.")
      .def("numpy", &to_numpy, "Same as asnumpy().")
      .def("item", &scalar_value, "Blocks, then returns the one element as a Python number.")
      .def("__float__", [](const PyTensor& t) { return nb::cast<double>(nb::float_(scalar_value(t))); })
      .def("__int__", [](const PyTensor& t) { return nb::int_(scalar_value(t)); })
      .def("__bool__", [](const PyTensor& t) {
        if (defined(t).numel() != 1) {
          throw nb::value_error("the truth value of a tensor with more than one element is ambiguous");
        }
        return PyObject_IsTrue(scalar_value(t).ptr()) == 1;
      })
      .def("__len__", [](const PyTensor& t) {
        const Tensor& x = defined(t);
        if (x.rank() == 0) throw nb::type_error("len() of a 0-d tensor");
        return x.shape()[0];
      })
      .def("__repr__", &repr)
      .def("__str__", &repr)
      .def(
          "__array__",
          [](const PyTensor& t, nb::handle dtype, nb::handle copy) {
            if (!copy.is_none() && !PyObject_IsTrue(copy.ptr())) {
              throw nb::value_error("a Tensor converts to NumPy by copying (copy=False is impossible); "
                                    "np.from_dlpack(t) shares the memory of a CPU tensor");
            }
            nb::object array = to_numpy(t);
            if (!dtype.is_none()) array = array.attr("astype")(dtype);
            return array;
          },
          nb::arg("dtype").none() = nb::none(), nb::arg("copy").none() = nb::none())
      .def(
          "wait_to_read",
          [](const PyTensor& t) {
            const Tensor& x = defined(t);
            {
              ReleaseGil unlocked;
              x.engine().wait_to_read(x.var());
            }
            release_queued_refs();
          },
          "Blocks until the writes pushed before have run (raises their error).")
      .def(
          "reshape",
          [](const PyTensor& t, nb::args dims) {
            Shape shape = dims.size() == 1 && !nb::isinstance<nb::int_>(dims[0]) ? parse_shape(dims[0])
                                                                                   : parse_shape(dims);
            return t.with(defined(t).reshape(std::move(shape)));
          },
          nb::arg("shape"), "A view of the same storage with another shape of equal size.")
      .def(
          "copy_to",
          [](const PyTensor& t, nb::handle device) {
            const Device target = parse_device(device);
            GilReleaseIfNeeded unlocked;
            return t.with(defined(t).copy_to(target));
          },
          nb::arg("device"), "A copy on another device, pushed as a copy operation.")
      .def(
          "astype", [](const PyTensor& t, nb::handle dtype) { return cast_op(t, parse_dtype(dtype)); }, nb::arg("dtype"))
      .def(
          "sum", [](const PyTensor& t, std::optional<int> axis) { return reduce_op(false, t, axis, nullptr); },
          nb::arg("axis").none() = nb::none())
      .def(
          "mean", [](const PyTensor& t, std::optional<int> axis) { return reduce_op(true, t, axis, nullptr); },
          nb::arg("axis").none() = nb::none())
      .def("relu", [](const PyTensor& t) { return relu_op(t, nullptr); })
      .def("__add__", [](const PyTensor& a, nb::handle b) { return binary_operator(Binary::add, a, b); })
      .def("__radd__", [](const PyTensor& a, nb::handle b) { return binary_operator(Binary::add, a, b); })
      .def("__sub__", [](const PyTensor& a, nb::handle b) { return binary_operator(Binary::sub, a, b); })
      .def("__rsub__",
           [](const PyTensor& a, nb::handle b) -> nb::object {
             // b - a = (-a) + b
             if (!number_value(b)) return nb::borrow(Py_NotImplemented);
             PyTensor negated = scale_op(a, -1.0, nullptr);
             binary_op(Binary::add, negated, b, &negated);
             return nb::cast(std::move(negated));
           })
      .def("__mul__", [](const PyTensor& a, nb::handle b) { return binary_operator(Binary::mul, a, b); })
      .def("__rmul__", [](const PyTensor& a, nb::handle b) { return binary_operator(Binary::mul, a, b); })
      .def("__truediv__",
           [](const PyTensor& a, nb::handle b) -> nb::object {
             const std::optional<double> value = number_value(b);
             if (!value) return nb::borrow(Py_NotImplemented);
             return nb::cast(scale_op(a, 1.0 / *value, nullptr));
           })
      .def("__neg__", [](const PyTensor& a) { return scale_op(a, -1.0, nullptr); })
      .def("__matmul__", [](const PyTensor& a, const PyTensor& b) { return matmul_op(a, b, false, false); })
      .def("__iadd__", [](nb::handle self, nb::handle b) { return inplace_operator(Binary::add, self, b); })
      .def("__isub__", [](nb::handle self, nb::handle b) { return inplace_operator(Binary::sub, self, b); })
      .def("__imul__", [](nb::handle self, nb::handle b) { return inplace_operator(Binary::mul, self, b); })
      .def("__itruediv__", [](nb::handle self, nb::handle b) -> nb::object {
        const std::optional<double> value = number_value(b);
        if (!value) return nb::borrow(Py_NotImplemented);
        const PyTensor& a = nb::cast<const PyTensor&>(self);
        scale_op(a, 1.0 / *value, &a);
        return nb::borrow(self);
      });
  // NumPy's ufuncs and operators defer to the Tensor's own (which refuse
  // arrays), so that `array + tensor` is an error, not a hidden blocker.
  cls.attr("__array_ufunc__") = nb::none();

  m.def("array", &array_from, nb::arg("data"), nb::kw_only(), nb::arg("dtype").none() = nb::none(),
        nb::arg("device") = "cpu", nb::arg("engine").none() = nb::none(),
        "A tensor holding a copy of data (a NumPy array, a list, a number).\n\n"
        "NumPy arrays keep their dtype (float32, float64, float16, int32; others raise TypeError)\n"
        "and are copied into C order when strided; lists and numbers become float32 or int32.");
  auto creator = [&m](const char* name, double value, const char* doc) {
    m.def(
        name,
        [value](nb::handle shape, nb::handle dtype, nb::handle device, nb::handle engine) {
          const EngineRef ref = engine_or_default(engine);
          Shape s = parse_shape(shape);
          const DType t = parse_dtype(dtype);
          const Device d = parse_device(device);
          GilReleaseIfNeeded unlocked;
          return PyTensor(ref, Tensor::full(ref->engine(), std::move(s), value, t, d));
        },
        nb::arg("shape"), nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device") = "cpu",
        nb::arg("engine").none() = nb::none(), doc);
  };
  creator("zeros", 0.0, "A tensor of zeros (float32 unless dtype=).");
  creator("ones", 1.0, "A tensor of ones (float32 unless dtype=).");
  m.def(
      "full",
      [](nb::handle shape, double value, nb::handle dtype, nb::handle device, nb::handle engine) {
        const EngineRef ref = engine_or_default(engine);
        Shape s = parse_shape(shape);
        const DType t = parse_dtype(dtype);
        const Device d = parse_device(device);
        GilReleaseIfNeeded unlocked;
        return PyTensor(ref, Tensor::full(ref->engine(), std::move(s), value, t, d));
      },
      nb::arg("shape"), nb::arg("value"), nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device") = "cpu",
      nb::arg("engine").none() = nb::none(), "A tensor with every element equal to value.");
  m.def(
      "empty",
      [](nb::handle shape, nb::handle dtype, nb::handle device, nb::handle engine) {
        const EngineRef ref = engine_or_default(engine);
        return PyTensor(ref, Tensor::empty(ref->engine(), parse_shape(shape), parse_dtype(dtype), parse_device(device)));
      },
      nb::arg("shape"), nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device") = "cpu",
      nb::arg("engine").none() = nb::none(), "An uninitialised tensor (write it with an op before reading).");
  m.def(
      "uniform",
      [](nb::handle shape, double low, double high, std::optional<std::uint64_t> seed, nb::handle dtype,
         nb::handle device, nb::handle engine) {
        if (!(low <= high)) throw nb::value_error("uniform: low must be <= high");
        return random_tensor(shape, seed, dtype, device, engine, [&](Engine& e, Shape s, std::uint64_t from, DType t,
                                                                     Device d) {
          return Tensor::uniform(e, std::move(s), from, low, high, t, d);
        });
      },
      nb::arg("shape"), nb::arg("low") = 0.0, nb::arg("high") = 1.0, nb::kw_only(), nb::arg("seed").none() = nb::none(),
      nb::arg("dtype").none() = nb::none(), nb::arg("device") = "cpu", nb::arg("engine").none() = nb::none(),
      "Uniform in [low, high). The values depend on the seed and the shape only.");
  m.def(
      "normal",
      [](nb::handle shape, double mean, double std, std::optional<std::uint64_t> seed, nb::handle dtype,
         nb::handle device, nb::handle engine) {
        if (!(std >= 0)) throw nb::value_error("normal: std must be >= 0");
        return random_tensor(shape, seed, dtype, device, engine, [&](Engine& e, Shape s, std::uint64_t from, DType t,
                                                                     Device d) {
          return Tensor::normal(e, std::move(s), from, mean, std, t, d);
        });
      },
      nb::arg("shape"), nb::arg("mean") = 0.0, nb::arg("std") = 1.0, nb::kw_only(), nb::arg("seed").none() = nb::none(),
      nb::arg("dtype").none() = nb::none(), nb::arg("device") = "cpu", nb::arg("engine").none() = nb::none(),
      "Normal with the given mean and standard deviation.");
  m.def(
      "seed", [](std::uint64_t seed) { g_next_seed.store(seed, std::memory_order_relaxed); }, nb::arg("seed"),
      "Sets the seed the next uniform()/normal() without seed= uses (each such call takes the next).");
  return cls;
}

}  // namespace depengine::python
