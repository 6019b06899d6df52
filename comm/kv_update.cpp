// KVUpdate::apply: the SGD of kvstore.h as ops on the stored value's device.

#include "comm/kv_update.h"

#include <depengine/ops.h>

namespace depengine::detail {

void KVUpdate::apply(int key, const Tensor& merged, Tensor& stored, Tensor& state) const {
  if (updater) return updater(key, merged, stored);
  if (!sgd) {
    ops::copy(merged, stored);
    return;
  }
  const SGDOptimizer& o = *sgd;
  if (o.momentum == 0.0) {
    const Tensor grad = o.rescale_grad == 1.0 ? merged : ops::scale(merged, o.rescale_grad);
    ops::sgd_update(stored, grad, o.learning_rate, o.weight_decay);
    return;
  }
  if (!state.defined() || state.shape() != stored.shape() || state.dtype() != stored.dtype() ||
      state.device() != stored.device()) {
    state = Tensor::zeros(stored.engine(), stored.shape(), stored.dtype(), stored.device());
  }
  ops::scale(state, o.momentum, state);
  ops::axpy(o.rescale_grad, merged, state);
  if (o.weight_decay != 0.0) ops::axpy(o.weight_decay, stored, state);
  ops::axpy(-o.learning_rate, state, stored);
}

}  // namespace depengine::detail
