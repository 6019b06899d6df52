// softmax_cross_entropy: the loss of a classifier and its gradient in one pass.

#include "depengine/ops.h"
#include "ops/op_support.h"

namespace depengine::ops {

using detail::fail;

Cost softmax_cross_entropy(const Tensor& logits, const Tensor& labels, const Tensor& loss,
                           const Tensor& grad) {
  constexpr const char* name = "softmax_cross_entropy";
  detail::require_placed_together(name, {&logits, &labels, &loss});
  detail::require_float_dtype(name, {&logits, &loss});
  if (logits.rank() != 2) fail(name, "logits must be [rows, classes], got " + logits.describe());
  const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  if (labels.dtype() != DType::int32) fail(name, "labels must be int32, got " + labels.describe());
  detail::require_shape(name, "labels", labels, {rows});
  if (loss.numel() != 1) fail(name, "loss must have one element, got " + loss.describe());
  if (rows > 0 && classes == 0) fail(name, "logits have rows but no classes: " + logits.describe());
  detail::Access access;
  access.read(logits).read(labels).write(loss);
  if (grad.defined()) {
    detail::require_placed_together(name, {&logits, &grad});
    detail::require_float_dtype(name, {&logits, &grad});
    detail::require_shape(name, "grad", grad, logits.shape());
    access.write(grad);
  }
  const auto& backend = detail::backend_for(loss.device());
  detail::push_op(name, loss.engine(), loss.device(), access,
                  [&backend, t = logits.dtype(), pz = detail::Memory(logits), pl = detail::Memory(labels), rows,
                   classes, ploss = detail::Memory(loss), pg = detail::Memory(grad)](RunContext& ctx) {
                    backend.softmax_cross_entropy(t, pz.get(), static_cast<const std::int32_t*>(pl.get()), rows,
                                                  classes, ploss.get(), pg.get(), ctx.stream);
                  });
  // Per element: max, subtract, exp, add, and for the gradient exp, subtract, divide.
  const double n = static_cast<double>(logits.numel());
  return {n * (grad.defined() ? 7 : 4),
          detail::bytes_of(logits.numel() * (grad.defined() ? 2 : 1), logits.dtype()) +
              detail::bytes_of(rows, DType::int32)};
}

}  // namespace depengine::ops
