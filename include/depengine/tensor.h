#pragma once
/// \file tensor.h
/// `Tensor`: an n-dimensional array on one device, guarded by one engine variable.
///
/// A Tensor is a handle: copying it shares the storage and the variable.
/// When the last handle goes, the storage is released through
/// `Engine::delete_var`, i.e. only after every operation pushed on it has
/// completed on every device and stream — dropping a tensor while work on it
/// is in flight is safe. Tensors must not outlive their engine.
///
/// Operations on tensors (`depengine/ops.h`) are pushed asynchronously.
/// Reading values on the host is an explicit blocker: `to_host()` and
/// `item()` wait for the writes pushed before them (and rethrow their errors).
///
/// Random tensors are generated on the host by a counter-based generator, so a
/// seed gives the same values on every device and under every engine kind.
///
/// Thread safety: handles may be copied, dropped and used from any thread.
/// Pushing operations on the same tensor from several threads is ordered as
/// the pushes return (the engine's contract).
///
/// \code
///   #include <depengine/ops.h>
///   #include <depengine/tensor.h>
///
///   depengine::Engine engine;
///   using depengine::Tensor;
///   Tensor x = Tensor::uniform(engine, {2, 3}, /*seed=*/42);
///   Tensor y = Tensor::full(engine, {2, 3}, 1.0);
///   depengine::ops::axpy(2.0, x, y);          // y += 2 x, asynchronously
///   std::vector<float> v = y.to_host<float>(); // blocks until y is written
/// \endcode

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "depengine/device.h"
#include "depengine/dtype.h"
#include "depengine/engine.h"
#include "depengine/var.h"

namespace depengine {

/// Sizes of the dimensions; `{}` is a scalar (one element).
using Shape = std::vector<std::int64_t>;

namespace detail {
class TensorStorage;
struct TensorAccess;
}

class Tensor {
 public:
  /// A null tensor; every op rejects it.
  Tensor() = default;

  /// Uninitialised storage. Throws std::invalid_argument for a negative dimension.
  static Tensor empty(Engine& engine, Shape shape, DType dtype = DType::float32,
                      Device device = Device::cpu());
  static Tensor zeros(Engine& engine, Shape shape, DType dtype = DType::float32,
                      Device device = Device::cpu());
  static Tensor full(Engine& engine, Shape shape, double value, DType dtype = DType::float32,
                     Device device = Device::cpu());
  /// Uniform in [low, high); the values depend on `seed` and the shape only.
  static Tensor uniform(Engine& engine, Shape shape, std::uint64_t seed, double low = 0.0,
                        double high = 1.0, DType dtype = DType::float32,
                        Device device = Device::cpu());
  /// Normal with the given mean and standard deviation (Box-Muller).
  static Tensor normal(Engine& engine, Shape shape, std::uint64_t seed, double mean = 0.0,
                       double stddev = 1.0, DType dtype = DType::float32,
                       Device device = Device::cpu());
  /// Copies `values` (row-major, `shape`'s element count) before returning.
  static Tensor from_host(Engine& engine, std::span<const float> values, Shape shape,
                          Device device = Device::cpu());
  static Tensor from_host(Engine& engine, std::span<const double> values, Shape shape,
                          Device device = Device::cpu());
  static Tensor from_host(Engine& engine, std::span<const std::int32_t> values, Shape shape,
                          Device device = Device::cpu());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  std::int64_t numel() const;
  DType dtype() const { return dtype_; }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  Device device() const;
  Engine& engine() const;
  /// The variable that orders every operation on this tensor's storage.
  Var var() const;
  /// The storage (device memory on CUDA). Touch it only inside an operation
  /// that declares `var()` as a read or a write. CPU memory is allocated at
  /// its first touch: by the first operation that runs on the tensor, or by
  /// this call (so an allocation failure of an op's result is that op's
  /// error, rethrown by the blockers). Throws std::bad_alloc.
  void* data() const;
  /// "float32[2, 3] on cpu", for messages.
  std::string describe() const;

  /// The same storage and variable seen with another shape of equal size.
  Tensor reshape(Shape shape) const;
  /// A new tensor on `device` holding a copy, pushed as a copy operation.
  /// Copied from CUDA to the CPU, it lives in pinned host memory, which the
  /// GPU copies to and from directly; other host memory goes through pinned
  /// staging buffers.
  Tensor copy_to(Device device) const;

  /// Blocks until the writes pushed before have completed, then returns the
  /// values converted to T (float, double or std::int32_t). Rethrows the error
  /// of a failed write. Throws std::logic_error inside an operation.
  template <class T>
  std::vector<T> to_host() const;
  /// Like to_host() for a one-element tensor.
  template <class T>
  T item() const;

 private:
  friend struct detail::TensorAccess;  // the ops library's view of the storage
  Tensor(std::shared_ptr<detail::TensorStorage> storage, Shape shape, DType dtype)
      : storage_(std::move(storage)), shape_(std::move(shape)), dtype_(dtype) {}

  std::shared_ptr<detail::TensorStorage> storage_;
  Shape shape_;
  DType dtype_ = DType::float32;
};

/// Number of elements of a shape (1 for a scalar).
std::int64_t shape_numel(const Shape& shape);
/// "[2, 3]".
std::string shape_to_string(const Shape& shape);

}  // namespace depengine
