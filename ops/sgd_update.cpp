// sgd_update: one step of stochastic gradient descent with weight decay.

#include "depengine/ops.h"
#include "ops/op_support.h"

namespace depengine::ops {

Cost sgd_update(const Tensor& weight, const Tensor& grad, double lr, double weight_decay) {
  detail::require_placed_together("sgd_update", {&weight, &grad});
  detail::require_float_dtype("sgd_update", {&weight, &grad});
  detail::require_shape("sgd_update", "grad", grad, weight.shape());
  if (weight.var() == grad.var()) detail::fail("sgd_update", "weight and grad share storage");
  const auto& backend = detail::backend_for(weight.device());
  // w - lr (g + wd w) = (1 - lr wd) w - lr g: one axpby pass.
  detail::push_op("sgd_update", weight.engine(), weight.device(),
                  detail::Access().read(grad).write(weight),
                  [&backend, t = weight.dtype(), alpha = -lr, beta = 1.0 - lr * weight_decay,
                   pg = detail::Memory(grad), pw = detail::Memory(weight), n = weight.numel()](RunContext& ctx) {
                    backend.axpby(t, alpha, pg.get(), beta, pw.get(), n, ctx.stream);
                  });
  return {3.0 * static_cast<double>(weight.numel()), detail::bytes_of(3 * weight.numel(), weight.dtype())};
}

}  // namespace depengine::ops
