#pragma once
// The ops library as the Python functions and operators call it: each pushes
// its op with the GIL released (see GilReleaseIfNeeded) and returns at once.

#include <nanobind/nanobind.h>

#include <optional>

#include "python/src/handles.h"

namespace depengine::python {

enum class Binary { add, sub, mul };

/// A Python number (int, float, NumPy scalar): its value. Empty otherwise.
std::optional<double> number_value(nanobind::handle x);

/// a <op> b, for b a Tensor or a Python number; into `out` when not null.
/// Returns the new tensor, or an empty handle when it wrote `out`
/// (likewise for the other ops with an `out`).
PyTensor binary_op(Binary op, const PyTensor& a, nanobind::handle b, const PyTensor* out);
/// alpha x, into `out` when not null.
PyTensor scale_op(const PyTensor& x, double alpha, const PyTensor* out);
PyTensor matmul_op(const PyTensor& a, const PyTensor& b, bool trans_a, bool trans_b);
/// The sum (mean) over all elements, or over `axis` (negative counts from the end).
PyTensor reduce_op(bool mean, const PyTensor& x, std::optional<int> axis, const PyTensor* out);
PyTensor relu_op(const PyTensor& x, const PyTensor* out);
PyTensor cast_op(const PyTensor& x, DType dtype);

}  // namespace depengine::python
