// Elementwise ops: fill, copy (with dtype conversion), add/sub/mul with a
// trailing-dims broadcast, scale, axpy, relu and its gradient.

#include "depengine/ops.h"
#include "ops/element_io.h"
#include "ops/op_support.h"

namespace depengine::ops {

using detail::Access;
using detail::bytes_of;
using detail::fail;
using detail::push_op;

Cost fill(const Tensor& out, double value) {
  detail::require_placed_together("fill", {&out});
  const std::uint64_t bits = detail::element_bits(out.dtype(), value);
  const std::size_t size = dtype_size(out.dtype());
  const auto& backend = detail::backend_for(out.device());
  push_op("fill", out.engine(), out.device(), Access().write(out),
          [&backend, p = detail::Memory(out), n = out.numel(), size, bits](RunContext& ctx) {
            backend.fill(p.get(), n, size, bits, ctx.stream);
          });
  return {0, bytes_of(out.numel(), out.dtype())};
}

Cost copy(const Tensor& src, const Tensor& dst) {
  if (src.defined() && dst.defined() && &src.engine() == &dst.engine() && src.device() != dst.device()) {
    if (src.dtype() != dst.dtype() || src.numel() != dst.numel()) {
      fail("copy", "between devices, dtypes and element counts must match: " + src.describe() + " and " +
                       dst.describe());
    }
    detail::copy_between(src, dst);
    return {0, 2.0 * static_cast<double>(src.nbytes())};
  }
  detail::require_placed_together("copy", {&src, &dst});
  if (src.numel() != dst.numel()) {
    fail("copy", "element counts differ: " + src.describe() + " and " + dst.describe());
  }
  const auto& backend = detail::backend_for(dst.device());
  if (src.var() == dst.var()) {
    if (src.dtype() != dst.dtype()) fail("copy", "cannot convert a tensor onto its own storage");
    return {};  // copying storage onto itself: nothing to do
  }
  push_op("copy", dst.engine(), dst.device(), Access().read(src).write(dst),
          [&backend, from = src.dtype(), s = detail::Memory(src), to = dst.dtype(), d = detail::Memory(dst),
           n = dst.numel()](RunContext& ctx) { backend.convert(from, s.get(), to, d.get(), n, ctx.stream); });
  return {0, bytes_of(src.numel(), src.dtype()) + bytes_of(dst.numel(), dst.dtype())};
}

namespace {

Cost binary(const char* name, detail::BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  detail::require_placed_together(name, {&a, &b, &out});
  detail::require_float_dtype(name, {&a, &b, &out});
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const bool suffix = sb.size() <= sa.size() && std::equal(sb.begin(), sb.end(), sa.end() - sb.size());
  if (!suffix) {
    fail(name, "shapes " + shape_to_string(sa) + " and " + shape_to_string(sb) +
                   " do not broadcast (b's shape must equal a's or a suffix of it)");
  }
  detail::require_shape(name, "out", out, sa);
  // With an empty b (and so an empty a) there is nothing to compute.
  const std::int64_t n = a.numel(), nb = b.numel();
  detail::backend_for(out.device());  // throws here, at push, for a device without a backend
  // The backend is found again when it runs: with it, the closure would
  // outgrow what an operation stores without allocating.
  push_op(name, out.engine(), out.device(), Access().read(a).read(b).write(out),
          [op, t = out.dtype(), pa = detail::Memory(a), pb = detail::Memory(b), nb, po = detail::Memory(out),
           n](RunContext& ctx) {
            if (nb > 0) {
              detail::backend_for(ctx.device).binary(op, t, pa.get(), pb.get(), nb, po.get(), n, ctx.stream);
            }
          });
  return {static_cast<double>(n), bytes_of(2 * n + nb, out.dtype())};
}

}  // namespace

Cost add(const Tensor& a, const Tensor& b, const Tensor& out) {
  return binary("add", detail::BinaryOp::add, a, b, out);
}
Cost sub(const Tensor& a, const Tensor& b, const Tensor& out) {
  return binary("sub", detail::BinaryOp::sub, a, b, out);
}
Cost mul(const Tensor& a, const Tensor& b, const Tensor& out) {
  return binary("mul", detail::BinaryOp::mul, a, b, out);
}

Cost scale(const Tensor& x, double alpha, const Tensor& out) {
  detail::require_placed_together("scale", {&x, &out});
  detail::require_float_dtype("scale", {&x, &out});
  detail::require_shape("scale", "out", out, x.shape());
  const auto& backend = detail::backend_for(out.device());
  push_op("scale", out.engine(), out.device(), Access().read(x).write(out),
          [&backend, t = x.dtype(), alpha, px = detail::Memory(x), po = detail::Memory(out),
           n = x.numel()](RunContext& ctx) {
            backend.scale(t, alpha, px.get(), po.get(), n, ctx.stream);
          });
  return {static_cast<double>(x.numel()), bytes_of(2 * x.numel(), x.dtype())};
}

Cost axpy(double alpha, const Tensor& x, const Tensor& y) {
  detail::require_placed_together("axpy", {&x, &y});
  detail::require_float_dtype("axpy", {&x, &y});
  detail::require_shape("axpy", "y", y, x.shape());
  const auto& backend = detail::backend_for(y.device());
  push_op("axpy", y.engine(), y.device(), Access().read(x).write(y),
          [&backend, t = x.dtype(), alpha, px = detail::Memory(x), py = detail::Memory(y),
           n = x.numel()](RunContext& ctx) {
            backend.axpby(t, alpha, px.get(), 1.0, py.get(), n, ctx.stream);
          });
  return {2.0 * static_cast<double>(x.numel()), bytes_of(3 * x.numel(), x.dtype())};
}

Cost relu(const Tensor& x, const Tensor& out) {
  detail::require_placed_together("relu", {&x, &out});
  detail::require_float_dtype("relu", {&x, &out});
  detail::require_shape("relu", "out", out, x.shape());
  const auto& backend = detail::backend_for(out.device());
  push_op("relu", out.engine(), out.device(), Access().read(x).write(out),
          [&backend, t = x.dtype(), px = detail::Memory(x), po = detail::Memory(out), n = x.numel()](RunContext& ctx) {
            backend.relu(t, px.get(), po.get(), n, ctx.stream);
          });
  return {static_cast<double>(x.numel()), bytes_of(2 * x.numel(), x.dtype())};
}

Cost relu_grad(const Tensor& x, const Tensor& grad_out, const Tensor& grad_in) {
  detail::require_placed_together("relu_grad", {&x, &grad_out, &grad_in});
  detail::require_float_dtype("relu_grad", {&x, &grad_out, &grad_in});
  detail::require_shape("relu_grad", "grad_out", grad_out, x.shape());
  detail::require_shape("relu_grad", "grad_in", grad_in, x.shape());
  const auto& backend = detail::backend_for(grad_in.device());
  push_op("relu_grad", x.engine(), x.device(), Access().read(x).read(grad_out).write(grad_in),
          [&backend, t = x.dtype(), px = detail::Memory(x), pdy = detail::Memory(grad_out),
           pdx = detail::Memory(grad_in), n = x.numel()](RunContext& ctx) {
            backend.relu_grad(t, px.get(), pdy.get(), pdx.get(), n, ctx.stream);
          });
  return {static_cast<double>(x.numel()), bytes_of(3 * x.numel(), x.dtype())};
}

}  // namespace depengine::ops
