#include "ops/op_support.h"

#include <algorithm>
#include <stdexcept>

namespace depengine::ops::detail {

void fail(std::string_view op, const std::string& why) {
  throw std::invalid_argument("ops::" + std::string(op) + ": " + why);
}

void require_placed_together(std::string_view op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (!t->defined()) fail(op, "an operand is a null Tensor");
    if (first == nullptr) {
      first = t;
    } else if (&t->engine() != &first->engine()) {
      fail(op, "operands belong to different engines");
    } else if (t->device() != first->device()) {
      fail(op, "operands are on different devices: " + first->describe() + " and " + t->describe());
    }
  }
}

void require_float_dtype(std::string_view op, std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = *tensors.begin();
  for (const Tensor* t : tensors) {
    if (t->dtype() != DType::float32 && t->dtype() != DType::float64) {
      fail(op, "needs float32 or float64 operands, got " + t->describe());
    }
    if (t->dtype() != first->dtype()) {
      fail(op, "operands have different dtypes: " + first->describe() + " and " + t->describe());
    }
  }
}

void require_shape(std::string_view op, std::string_view what, const Tensor& t, const Shape& shape) {
  if (t.shape() != shape) {
    fail(op, std::string(what) + " must have shape " + shape_to_string(shape) + ", got " +
                 t.describe());
  }
}

Access& Access::read(const Tensor& t) {
  const Var v = t.var();
  if (std::find(reads_.begin(), reads_.end(), v) == reads_.end() &&
      std::find(writes_.begin(), writes_.end(), v) == writes_.end()) {
    reads_.push_back(v);
    bytes_ += t.nbytes();
  }
  return *this;
}

Access& Access::write(const Tensor& t) {
  const Var v = t.var();
  const bool was_read = std::erase(reads_, v) != 0;
  if (std::find(writes_.begin(), writes_.end(), v) == writes_.end()) {
    writes_.push_back(v);
    if (!was_read) bytes_ += t.nbytes();
  }
  return *this;
}

void push_op(std::string_view name, Engine& engine, Device device, const Access& access, OpFn fn,
             OpProperty property) {
  backend_for(device);
  engine.push(std::move(fn), access.reads(), access.writes(),
              {.name = name, .device = device, .property = property, .bytes = access.bytes()});
}

}  // namespace depengine::ops::detail
