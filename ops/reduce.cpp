// Reductions: sum and mean over all elements or along one axis.

#include <limits>

#include "depengine/ops.h"
#include "ops/op_support.h"

namespace depengine::ops {

using detail::Access;
using detail::fail;

namespace {

// x seen as [outer, len, inner], reduced over len into out.
Cost reduce(const char* name, const Tensor& x, std::int64_t outer, std::int64_t len,
            std::int64_t inner, bool mean, const Tensor& out) {
  // The mean of nothing is 0/0.
  const double scale = !mean ? 1.0 : len ? 1.0 / static_cast<double>(len)
                                         : std::numeric_limits<double>::quiet_NaN();
  const auto& backend = detail::backend_for(out.device());
  detail::push_op(name, out.engine(), out.device(), Access().read(x).write(out),
                  [&backend, t = x.dtype(), px = detail::Memory(x), outer, len, inner, scale,
                   po = detail::Memory(out)](RunContext& ctx) {
                    backend.reduce_sum(t, px.get(), outer, len, inner, scale, po.get(), ctx.stream);
                  });
  return {static_cast<double>(x.numel()), detail::bytes_of(x.numel() + out.numel(), x.dtype())};
}

Cost reduce_all(const char* name, const Tensor& x, bool mean, const Tensor& out) {
  detail::require_placed_together(name, {&x, &out});
  detail::require_float_dtype(name, {&x, &out});
  if (out.numel() != 1) fail(name, "out must have one element, got " + out.describe());
  return reduce(name, x, 1, x.numel(), 1, mean, out);
}

Cost reduce_axis(const char* name, const Tensor& x, int axis, bool mean, const Tensor& out) {
  detail::require_placed_together(name, {&x, &out});
  detail::require_float_dtype(name, {&x, &out});
  if (axis < 0 || axis >= x.rank()) {
    fail(name, "axis " + std::to_string(axis) + " is out of range for " + x.describe());
  }
  Shape reduced = x.shape();
  reduced.erase(reduced.begin() + axis);
  detail::require_shape(name, "out", out, reduced);
  const Shape& s = x.shape();
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i];
  for (int i = axis + 1; i < x.rank(); ++i) inner *= s[i];
  return reduce(name, x, outer, s[axis], inner, mean, out);
}

}  // namespace

Cost sum(const Tensor& x, const Tensor& out) { return reduce_all("sum", x, false, out); }
Cost mean(const Tensor& x, const Tensor& out) { return reduce_all("mean", x, true, out); }
Cost sum(const Tensor& x, int axis, const Tensor& out) { return reduce_axis("sum", x, axis, false, out); }
Cost mean(const Tensor& x, int axis, const Tensor& out) { return reduce_axis("mean", x, axis, true, out); }

}  // namespace depengine::ops
