#pragma once
// What every op file shares: push-time checks that throw
// std::invalid_argument naming the op, the read/write lists an op declares,
// and the push itself.

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "depengine/engine.h"
#include "depengine/ops.h"
#include "depengine/tensor.h"
#include "ops/backend.h"
#include "ops/tensor_storage.h"

namespace depengine::ops::detail {

[[noreturn]] void fail(std::string_view op, const std::string& why);

/// Every tensor is defined and all share the first one's engine and device.
void require_placed_together(std::string_view op, std::initializer_list<const Tensor*> tensors);
/// float32 or float64, and the same dtype for all.
void require_float_dtype(std::string_view op, std::initializer_list<const Tensor*> tensors);
void require_shape(std::string_view op, std::string_view what, const Tensor& t, const Shape& shape);

/// What an op captures to reach a tensor's memory when it runs, rather than
/// the pointer: CPU memory is allocated at its first touch
/// (ops/tensor_storage.h). Null for a null tensor.
class Memory {
 public:
  explicit Memory(const Tensor& t) : storage_(t.defined() ? depengine::detail::TensorAccess::storage(t) : nullptr) {}
  void* get() const { return storage_ ? storage_->memory() : nullptr; }

 private:
  depengine::detail::TensorStorage* storage_;
};

/// Pushes dst = src for tensors of one dtype and element count on any two
/// devices (through pinned host memory where a device needs it).
void copy_between(const Tensor& src, const Tensor& dst);

/// The variables one op declares. A tensor both read and written is declared
/// once, as a write (the engine rejects a variable in both lists).
class Access {
 public:
  Access& read(const Tensor& t);
  Access& write(const Tensor& t);
  const std::vector<Var>& reads() const { return reads_; }
  const std::vector<Var>& writes() const { return writes_; }
  /// The bytes of the tensors declared, each counted once.
  std::size_t bytes() const { return bytes_; }

 private:
  std::vector<Var> reads_, writes_;
  std::size_t bytes_ = 0;
};

/// Pushes `fn` on `device`; the backend of the device is resolved first so a
/// CUDA op in a build without CUDA fails here, not in the engine.
void push_op(std::string_view name, Engine& engine, Device device, const Access& access, OpFn fn,
             OpProperty property = OpProperty::Normal);

/// Bytes of n elements of t's dtype.
inline double bytes_of(std::int64_t n, DType t) { return static_cast<double>(n) * dtype_size(t); }

}  // namespace depengine::ops::detail
