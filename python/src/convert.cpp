#include "python/src/convert.h"

#include <cstdlib>
#include <string_view>

namespace depengine::python {

std::string python_type_name(nb::handle h) { return Py_TYPE(h.ptr())->tp_name; }

std::vector<Tensor> tensors_of(nb::handle tensors, const char* call, const char* what, const EngineRef& engine) {
  std::vector<Tensor> out;
  auto take = [&](nb::handle item) {
    if (!nb::isinstance<PyTensor>(item)) {
      throw nb::type_error(
          (std::string(call) + ": " + what + " must be Tensors, not " + python_type_name(item)).c_str());
    }
    const PyTensor& t = nb::cast<const PyTensor&>(item);
    if (t.owner != engine) {
      throw nb::value_error((std::string(call) + ": a tensor of " + what + " belongs to another engine").c_str());
    }
    out.push_back(t.tensor);
  };
  if (nb::isinstance<PyTensor>(tensors)) {
    take(tensors);
  } else if (nb::isinstance<nb::sequence>(tensors) && !nb::isinstance<nb::str>(tensors)) {
    for (nb::handle item : tensors) take(item);
  } else {
    throw nb::type_error((std::string(call) + ": " + what + " must be a Tensor or a list of them, not " +
                          python_type_name(tensors))
                             .c_str());
  }
  return out;
}

Device parse_device(nb::handle device) {
  if (device.is_none()) return Device::cpu();
  if (!nb::isinstance<nb::str>(device)) {
    throw nb::type_error(("device must be a string such as 'cpu', 'cuda:0' or 'emulated:0', not " +
                          python_type_name(device)).c_str());
  }
  const std::string text = nb::cast<std::string>(device);
  const std::string_view s = text;
  const auto colon = s.find(':');
  const std::string_view kind = s.substr(0, colon);
  int index = 0;
  if (colon != std::string_view::npos) {
    const std::string digits(s.substr(colon + 1));
    char* end = nullptr;
    const long value = digits.empty() ? -1 : std::strtol(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0' || value < 0 || value > 1 << 20) {
      throw nb::value_error(("device '" + text + "': the index after ':' must be a non-negative integer").c_str());
    }
    index = static_cast<int>(value);
  }
  if (kind == "cpu" && index == 0) return Device::cpu();
  if (kind == "cuda" || kind == "gpu") return Device::cuda(index);
  if (kind == "emulated") return Device::emulated(index);
  throw nb::value_error(("unknown device '" + text + "' (expected 'cpu', 'cuda:N' or 'emulated:N')").c_str());
}

DType parse_dtype(nb::handle dtype) {
  if (dtype.is_none()) return DType::float32;
  std::string name;
  if (nb::isinstance<nb::str>(dtype)) {
    name = nb::cast<std::string>(dtype);
  } else {
    // np.float32, np.dtype("float32"), an array's .dtype: NumPy names them.
    try {
      name = nb::cast<std::string>(nb::module_::import_("numpy").attr("dtype")(dtype).attr("name"));
    } catch (const nb::python_error&) {
      throw nb::type_error(("dtype must be a dtype name or a NumPy dtype, not " + python_type_name(dtype)).c_str());
    }
  }
  for (DType t : {DType::float32, DType::float64, DType::float16, DType::bfloat16, DType::int32}) {
    if (name == dtype_name(t)) return t;
  }
  throw nb::type_error(("unsupported dtype '" + name +
                        "': depengine tensors hold float32, float64, float16, bfloat16 or int32")
                           .c_str());
}

const char* numpy_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::float16: return "float16";
    case DType::int32: return "int32";
    case DType::bfloat16: return nullptr;
  }
  return nullptr;
}

Shape parse_shape(nb::handle shape) {
  auto dimension = [](nb::handle d) -> std::int64_t {
    // bool is an int in Python, but a shape of True is a mistake.
    if (!nb::isinstance<nb::int_>(d) || PyBool_Check(d.ptr())) {
      throw nb::type_error(("a shape holds integers, not " + python_type_name(d)).c_str());
    }
    const auto value = nb::cast<std::int64_t>(d);
    if (value < 0) throw nb::value_error(("negative dimension " + std::to_string(value) + " in a shape").c_str());
    return value;
  };
  if (nb::isinstance<nb::int_>(shape)) return {dimension(shape)};
  if (nb::isinstance<nb::str>(shape) || !PySequence_Check(shape.ptr())) {
    throw nb::type_error(("shape must be an int or a sequence of ints, not " + python_type_name(shape)).c_str());
  }
  Shape out;
  for (nb::handle d : shape) out.push_back(dimension(d));
  return out;
}

nb::tuple shape_tuple(const Shape& shape) {
  nb::list dims;
  for (std::int64_t d : shape) dims.append(d);
  return nb::tuple(dims);
}

std::vector<Var> parse_vars(nb::handle vars, const char* what) {
  std::vector<Var> out;
  auto one = [&](nb::handle item, std::size_t index) {
    if (nb::isinstance<PyVar>(item)) {
      const PyVar& v = nb::cast<const PyVar&>(item);
      if (v.deleted) throw nb::value_error((std::string(what) + ": the variable '" + v.name + "' was deleted").c_str());
      out.push_back(v.var);
    } else if (nb::isinstance<PyTensor>(item)) {
      out.push_back(nb::cast<const PyTensor&>(item).tensor.var());
    } else {
      throw nb::type_error((std::string(what) + "[" + std::to_string(index) + "] must be a Var or a Tensor, not " +
                            python_type_name(item)).c_str());
    }
  };
  if (vars.is_none()) return out;
  if (nb::isinstance<PyVar>(vars) || nb::isinstance<PyTensor>(vars)) {
    one(vars, 0);
    return out;
  }
  if (!PySequence_Check(vars.ptr()) && !PyAnySet_Check(vars.ptr())) {
    throw nb::type_error((std::string(what) + " must be a Var, a Tensor or a list of them, not " + python_type_name(vars)).c_str());
  }
  std::size_t index = 0;
  for (nb::handle item : vars) one(item, index++);
  return out;
}

EngineRef engine_or_default(nb::handle engine) {
  if (engine.is_none()) return EngineHandle::default_engine();
  if (!nb::isinstance<PyEngine>(engine)) {
    throw nb::type_error(("engine must be an Engine, not " + python_type_name(engine)).c_str());
  }
  return nb::cast<const PyEngine&>(engine).ref;
}

}  // namespace depengine::python
