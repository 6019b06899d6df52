#pragma once
// Conversions between Python arguments and depengine's types, with the
// errors Python users expect: TypeError for a wrong kind of value,
// ValueError for a right kind with a wrong value.

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>
#include <vector>

#include <depengine/device.h>
#include <depengine/dtype.h>
#include <depengine/tensor.h>
#include <depengine/var.h>

#include "python/src/handles.h"

namespace depengine::python {

namespace nb = nanobind;

/// "cpu", "cuda", "cuda:1", "emulated:0" (a Device's own spelling).
Device parse_device(nb::handle device);
/// A dtype name ("float32"), a NumPy dtype or type (np.float32), or None (float32).
DType parse_dtype(nb::handle dtype);
/// An int or a sequence of ints.
Shape parse_shape(nb::handle shape);
nb::tuple shape_tuple(const Shape& shape);
/// The NumPy dtype name of `dtype`, or null for bfloat16 (NumPy has none).
const char* numpy_dtype_name(DType dtype);

/// `reads=`/`writes=`: None, one Var or Tensor, or an iterable of them.
std::vector<Var> parse_vars(nb::handle vars, const char* what);

/// The engine to make a tensor on: `engine`, else the default engine.
EngineRef engine_or_default(nb::handle engine);

/// A Tensor or a sequence of them, all of `engine` (TypeError, ValueError
/// naming `call` and `what` otherwise).
std::vector<Tensor> tensors_of(nb::handle tensors, const char* call, const char* what, const EngineRef& engine);

/// Python's name for the type of `h`, for messages.
std::string python_type_name(nb::handle h);

}  // namespace depengine::python
