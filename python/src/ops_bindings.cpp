// The ops library (depengine/ops.h) as module functions.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>

#include <depengine/ops.h>

#include "python/src/bindings.h"
#include "python/src/convert.h"
#include "python/src/tensor_ops.h"

namespace depengine::python {

namespace {

const PyTensor* optional_tensor(nb::handle h, const char* what) {
  if (h.is_none()) return nullptr;
  if (!nb::isinstance<PyTensor>(h)) throw nb::type_error((std::string(what) + " must be a Tensor, not " + python_type_name(h)).c_str());
  return &nb::cast<const PyTensor&>(h);
}

// Arithmetic mixes no dtypes: a clear TypeError before the op's own check.
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.defined() && b.defined() && a.dtype() != b.dtype()) {
    throw nb::type_error((std::string(op) + ": dtypes differ (" + a.describe() + " and " + b.describe() +
                          "); convert one with astype()")
                             .c_str());
  }
}

// An op's result: the new tensor, or, for the out= form, `out` itself (no new
// Python object per call).
nb::object result_or_out(PyTensor result, nb::handle out) {
  if (!out.is_none()) return nb::borrow(out);
  return nb::cast(std::move(result));
}

const char* binary_name(Binary op) { return op == Binary::add ? "add" : op == Binary::sub ? "sub" : "mul"; }

}  // namespace

std::optional<double> number_value(nb::handle x) {
  PyObject* o = x.ptr();
  if (PyFloat_Check(o) || PyLong_Check(o)) return PyFloat_AsDouble(o);
  // NumPy scalars convert to float; arrays (sequences) and tensors do not count.
  PyNumberMethods* number = Py_TYPE(o)->tp_as_number;
  if (number != nullptr && number->nb_float != nullptr && !PySequence_Check(o) && !nb::isinstance<PyTensor>(x)) {
    const double value = PyFloat_AsDouble(o);
    if (value == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return std::nullopt;
    }
    return value;
  }
  return std::nullopt;
}

PyTensor binary_op(Binary op, const PyTensor& a, nb::handle b, const PyTensor* out) {
  const char* name = binary_name(op);
  if (nb::isinstance<PyTensor>(b)) {
    const Tensor& bt = nb::cast<const PyTensor&>(b).tensor;
    check_same_dtype(name, a.tensor, bt);
    if (out != nullptr) check_same_dtype(name, a.tensor, out->tensor);
    GilReleaseIfNeeded unlocked;
    if (out != nullptr) {
      switch (op) {
        case Binary::add: ops::add(a.tensor, bt, out->tensor); break;
        case Binary::sub: ops::sub(a.tensor, bt, out->tensor); break;
        case Binary::mul: ops::mul(a.tensor, bt, out->tensor); break;
      }
      return {};
    }
    switch (op) {
      case Binary::add: return a.with(ops::add(a.tensor, bt));
      case Binary::sub: return a.with(ops::sub(a.tensor, bt));
      case Binary::mul: return a.with(ops::mul(a.tensor, bt));
    }
  }
  const std::optional<double> value = number_value(b);
  if (!value) {
    throw nb::type_error((std::string(name) + ": expected a Tensor or a number, not " + python_type_name(b)).c_str());
  }
  if (op == Binary::mul) return scale_op(a, *value, out);
  if (!a.tensor.defined()) throw nb::value_error((std::string(name) + ": null tensor").c_str());
  GilReleaseIfNeeded unlocked;
  // A scalar tensor broadcasts to any shape (the empty suffix).
  const Tensor scalar = Tensor::full(a.tensor.engine(), {}, op == Binary::sub ? -*value : *value, a.tensor.dtype(),
                                     a.tensor.device());
  if (out != nullptr) {
    ops::add(a.tensor, scalar, out->tensor);
    return {};
  }
  return a.with(ops::add(a.tensor, scalar));
}

PyTensor scale_op(const PyTensor& x, double alpha, const PyTensor* out) {
  GilReleaseIfNeeded unlocked;
  if (out != nullptr) {
    ops::scale(x.tensor, alpha, out->tensor);
    return {};
  }
  return x.with(ops::scale(x.tensor, alpha));
}

PyTensor matmul_op(const PyTensor& a, const PyTensor& b, bool trans_a, bool trans_b) {
  GilReleaseIfNeeded unlocked;
  return a.with(ops::matmul(a.tensor, b.tensor, trans_a, trans_b));
}

PyTensor reduce_op(bool mean, const PyTensor& x, std::optional<int> axis, const PyTensor* out) {
  if (axis && *axis < 0) *axis += x.tensor.rank();
  GilReleaseIfNeeded unlocked;
  if (out != nullptr) {
    if (axis) mean ? ops::mean(x.tensor, *axis, out->tensor) : ops::sum(x.tensor, *axis, out->tensor);
    else mean ? ops::mean(x.tensor, out->tensor) : ops::sum(x.tensor, out->tensor);
    return {};
  }
  if (axis) return x.with(mean ? ops::mean(x.tensor, *axis) : ops::sum(x.tensor, *axis));
  return x.with(mean ? ops::mean(x.tensor) : ops::sum(x.tensor));
}

PyTensor relu_op(const PyTensor& x, const PyTensor* out) {
  GilReleaseIfNeeded unlocked;
  if (out != nullptr) {
    ops::relu(x.tensor, out->tensor);
    return {};
  }
  return x.with(ops::relu(x.tensor));
}

PyTensor cast_op(const PyTensor& x, DType dtype) {
  GilReleaseIfNeeded unlocked;
  return x.with(ops::cast(x.tensor, dtype));
}

void bind_ops(nb::module_& m) {
  for (Binary op : {Binary::add, Binary::sub, Binary::mul}) {
    m.def(
        binary_name(op),
        [op](const PyTensor& a, nb::handle b, nb::handle out) {
          return result_or_out(binary_op(op, a, b, optional_tensor(out, "out")), out);
        },
        nb::arg("a"), nb::arg("b"), nb::kw_only(), nb::arg("out").none() = nb::none(),
        "Elementwise; b is a Tensor (its shape a's or a suffix of it) or a number. "
        "Writes `out` when given (it may be a).");
  }
  m.def(
      "scale",
      [](const PyTensor& x, double alpha, nb::handle out) {
        return result_or_out(scale_op(x, alpha, optional_tensor(out, "out")), out);
      },
      nb::arg("x"), nb::arg("alpha"), nb::kw_only(), nb::arg("out").none() = nb::none(), "alpha * x.");
  m.def(
      "axpy",
      [](double alpha, const PyTensor& x, const PyTensor& y) {
        check_same_dtype("axpy", x.tensor, y.tensor);
        GilReleaseIfNeeded unlocked;
        ops::axpy(alpha, x.tensor, y.tensor);
      },
      nb::arg("alpha"), nb::arg("x"), nb::arg("y"), "y += alpha * x, in place on y.");
  m.def(
      "relu",
      [](const PyTensor& x, nb::handle out) { return result_or_out(relu_op(x, optional_tensor(out, "out")), out); }, nb::arg("x"),
      nb::kw_only(), nb::arg("out").none() = nb::none(), "max(x, 0).");
  m.def(
      "relu_grad",
      [](const PyTensor& x, const PyTensor& grad_out, nb::handle out) {
        const PyTensor* target = optional_tensor(out, "out");
        GilReleaseIfNeeded unlocked;
        const Tensor grad_in = target != nullptr ? target->tensor
                                                 : Tensor::empty(x.tensor.engine(), grad_out.tensor.shape(),
                                                                 grad_out.tensor.dtype(), grad_out.tensor.device());
        ops::relu_grad(x.tensor, grad_out.tensor, grad_in);
        return x.with(grad_in);  // (with out=, the same tensor as out)
      },
      nb::arg("x"), nb::arg("grad_out"), nb::kw_only(), nb::arg("out").none() = nb::none(),
      "grad_out where x > 0, else 0 (the gradient through relu).");
  m.def(
      "sum",
      [](const PyTensor& x, std::optional<int> axis, nb::handle out) {
        return result_or_out(reduce_op(false, x, axis, optional_tensor(out, "out")), out);
      },
      nb::arg("x"), nb::arg("axis").none() = nb::none(), nb::kw_only(), nb::arg("out").none() = nb::none(),
      "The sum of all elements (a scalar tensor), or along axis.");
  m.def(
      "mean",
      [](const PyTensor& x, std::optional<int> axis, nb::handle out) {
        return result_or_out(reduce_op(true, x, axis, optional_tensor(out, "out")), out);
      },
      nb::arg("x"), nb::arg("axis").none() = nb::none(), nb::kw_only(), nb::arg("out").none() = nb::none(),
      "The mean of all elements, or along axis.");
  m.def("matmul", &matmul_op, nb::arg("a"), nb::arg("b"), nb::kw_only(), nb::arg("trans_a") = false,
        nb::arg("trans_b") = false, "op(a) @ op(b) for matrices (op: the transpose when trans_*).");
  m.def(
      "gemm",
      [](const PyTensor& a, const PyTensor& b, const PyTensor& c, bool trans_a, bool trans_b, double alpha,
         double beta) {
        GilReleaseIfNeeded unlocked;
        ops::gemm(a.tensor, b.tensor, c.tensor, trans_a, trans_b, alpha, beta);
      },
      nb::arg("a"), nb::arg("b"), nb::arg("c"), nb::kw_only(), nb::arg("trans_a") = false,
      nb::arg("trans_b") = false, nb::arg("alpha") = 1.0, nb::arg("beta") = 0.0,
      "c = alpha op(a) op(b) + beta c, in place on c.");
  m.def(
      "softmax_cross_entropy",
      [](const PyTensor& logits, const PyTensor& labels, bool with_grad) -> nb::object {
        if (labels.tensor.defined() && labels.tensor.dtype() != DType::int32) {
          throw nb::type_error(("softmax_cross_entropy: labels must be int32, not " + labels.tensor.describe()).c_str());
        }
        if (!logits.tensor.defined()) throw nb::value_error("softmax_cross_entropy: null tensor");
        Tensor loss, grad;
        {
          GilReleaseIfNeeded unlocked;
          const Tensor& l = logits.tensor;
          loss = Tensor::empty(l.engine(), {}, l.dtype(), l.device());
          if (with_grad) grad = Tensor::empty(l.engine(), l.shape(), l.dtype(), l.device());
          ops::softmax_cross_entropy(l, labels.tensor, loss, grad);
        }
        if (!with_grad) return nb::cast(logits.with(loss));
        return nb::make_tuple(logits.with(loss), logits.with(grad));
      },
      nb::arg("logits"), nb::arg("labels"), nb::kw_only(), nb::arg("grad") = false,
      "The mean cross-entropy of softmax(logits) [rows, classes] against int32 labels [rows];\n"
      "with grad=True, (loss, d loss / d logits).");
  m.def(
      "sgd_update",
      [](const PyTensor& weight, const PyTensor& grad, double lr, double weight_decay) {
        check_same_dtype("sgd_update", weight.tensor, grad.tensor);
        GilReleaseIfNeeded unlocked;
        ops::sgd_update(weight.tensor, grad.tensor, lr, weight_decay);
      },
      nb::arg("weight"), nb::arg("grad"), nb::arg("lr"), nb::arg("weight_decay") = 0.0,
      "weight -= lr * (grad + weight_decay * weight), in place.");
  m.def(
      "fill",
      [](const PyTensor& out, double value) {
        GilReleaseIfNeeded unlocked;
        ops::fill(out.tensor, value);
      },
      nb::arg("out"), nb::arg("value"), "Sets every element of out to value.");
  m.def(
      "copy",
      [](const PyTensor& src, const PyTensor& dst) {
        GilReleaseIfNeeded unlocked;
        ops::copy(src.tensor, dst.tensor);
      },
      nb::arg("src"), nb::arg("dst"), "dst = src (same element count; converts the dtype).");
  m.def(
      "cast", [](const PyTensor& x, nb::handle dtype) { return cast_op(x, parse_dtype(dtype)); }, nb::arg("x"),
      nb::arg("dtype"), "x converted to dtype, as a new tensor.");
}

}  // namespace depengine::python
