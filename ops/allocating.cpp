// The allocating forms of the ops: allocate the result on the operands'
// device, push the op that writes it, return it.

#include "depengine/ops.h"
#include "ops/op_support.h"

namespace depengine::ops {

namespace {

// A result like `like` (same engine and device) with `shape` and `dtype`.
// A null `like` gets the op's own error message from the op itself.
Tensor result(const char* op, const Tensor& like, Shape shape, DType dtype) {
  if (!like.defined()) detail::fail(op, "an operand is a null Tensor");
  return Tensor::empty(like.engine(), std::move(shape), dtype, like.device());
}

Shape without_axis(const char* op, const Tensor& x, int axis) {
  if (!x.defined()) detail::fail(op, "an operand is a null Tensor");
  if (axis < 0 || axis >= x.rank()) {
    detail::fail(op, "axis " + std::to_string(axis) + " is out of range for " + x.describe());
  }
  Shape s = x.shape();
  s.erase(s.begin() + axis);
  return s;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = result("add", a, a.shape(), a.dtype());
  add(a, b, out);
  return out;
}
Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = result("sub", a, a.shape(), a.dtype());
  sub(a, b, out);
  return out;
}
Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = result("mul", a, a.shape(), a.dtype());
  mul(a, b, out);
  return out;
}
Tensor scale(const Tensor& x, double alpha) {
  Tensor out = result("scale", x, x.shape(), x.dtype());
  scale(x, alpha, out);
  return out;
}
Tensor relu(const Tensor& x) {
  Tensor out = result("relu", x, x.shape(), x.dtype());
  relu(x, out);
  return out;
}
Tensor sum(const Tensor& x) {
  Tensor out = result("sum", x, {}, x.dtype());
  sum(x, out);
  return out;
}
Tensor mean(const Tensor& x) {
  Tensor out = result("mean", x, {}, x.dtype());
  mean(x, out);
  return out;
}
Tensor sum(const Tensor& x, int axis) {
  Tensor out = result("sum", x, without_axis("sum", x, axis), x.dtype());
  sum(x, axis, out);
  return out;
}
Tensor mean(const Tensor& x, int axis) {
  Tensor out = result("mean", x, without_axis("mean", x, axis), x.dtype());
  mean(x, axis, out);
  return out;
}
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  if (!a.defined() || !b.defined() || a.rank() != 2 || b.rank() != 2) {
    detail::fail("matmul", "needs two matrices, got " + a.describe() + " and " + b.describe());
  }
  const bool half = a.dtype() == DType::float16 || a.dtype() == DType::bfloat16;
  Tensor c = result("matmul", a, {a.shape()[trans_a ? 1 : 0], b.shape()[trans_b ? 0 : 1]},
                    half ? DType::float32 : a.dtype());
  gemm(a, b, c, trans_a, trans_b);
  return c;
}
Tensor cast(const Tensor& x, DType dtype) {
  Tensor out = result("cast", x, x.shape(), dtype);
  copy(x, out);
  return out;
}

}  // namespace depengine::ops
