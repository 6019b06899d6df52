// Tensor handles: creation, host access (the blockers) and copies between devices.

#include "depengine/tensor.h"

#include <cstring>
#include <stdexcept>

#include "depengine/ops.h"
#include "ops/element_io.h"
#include "ops/op_support.h"
#include "ops/random.h"
#include "ops/tensor_storage.h"

namespace depengine {

namespace detail {

TensorStorage::TensorStorage(Engine& engine, Device device, std::size_t bytes, const ops::detail::Backend* staged_for)
    : engine_(&engine), device_(device), backend_(&ops::detail::backend_for(device)), staged_for_(staged_for),
      bytes_(bytes) {}

std::shared_ptr<TensorStorage> TensorStorage::make_with(Engine& engine, Device device, std::size_t bytes,
                                                        const ops::detail::Backend* staged_for) {
  std::unique_ptr<TensorStorage, Discard> s(new TensorStorage(engine, device, bytes, staged_for));
  if (!device.is_cpu() || staged_for) s->memory();
  s->var_ = engine.new_var("tensor");  // on a throw, Discard frees what memory() took
  return std::shared_ptr<TensorStorage>(s.release(), &retire);
}

std::shared_ptr<TensorStorage> TensorStorage::make(Engine& engine, Device device, std::size_t bytes) {
  return make_with(engine, device, bytes, nullptr);
}

std::shared_ptr<TensorStorage> TensorStorage::make_staged(Engine& engine, std::size_t bytes, Device staged_for) {
  return make_with(engine, Device::cpu(), bytes, &ops::detail::backend_for(staged_for));
}

void* TensorStorage::memory() {
  void* data = data_.load(std::memory_order_acquire);
  if (data != nullptr || bytes_ == 0) return data;
  void* fresh = staged_for_ ? staged_for_->allocate_staging(bytes_) : backend_->allocate(device_, bytes_);
  if (data_.compare_exchange_strong(data, fresh, std::memory_order_acq_rel)) return fresh;
  give_back(fresh);  // another first touch won: keep its buffer
  return data;
}

void TensorStorage::give_back(void* data) const noexcept {
  if (staged_for_) {
    staged_for_->deallocate_staging(data, bytes_);
  } else {
    backend_->deallocate(device_, data, bytes_);
  }
}

void TensorStorage::Discard::operator()(TensorStorage* storage) const noexcept {
  if (void* data = storage->data_.load(std::memory_order_acquire)) storage->give_back(data);
  delete storage;
}

void TensorStorage::retire(TensorStorage* storage) noexcept {
  // Engine::delete_var of a live variable does not throw.
  storage->engine_->delete_var(storage->var_, [storage] { Discard{}(storage); });
}

}  // namespace detail

namespace {

using detail::TensorAccess;
using ops::detail::Access;
using ops::detail::push_op;

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::float32;
  if constexpr (std::is_same_v<T, double>) return DType::float64;
  if constexpr (std::is_same_v<T, std::int32_t>) return DType::int32;
}

// A host buffer that carries data between a CPU operation and a CUDA copy
// operation, guarded by its own variable; deleting that variable frees the
// buffer once both operations are done.
class StagingBuffer {
 public:
  StagingBuffer(Engine& engine, const ops::detail::Backend& backend, std::size_t bytes)
      : engine_(engine), backend_(backend), bytes_(bytes), data_(backend.allocate_staging(bytes)),
        var_(engine.new_var("staging")) {}
  ~StagingBuffer() {
    engine_.delete_var(var_, [b = &backend_, p = data_, n = bytes_] { b->deallocate_staging(p, n); });
  }
  void* data() const { return data_; }
  Var var() const { return var_; }

 private:
  Engine& engine_;
  const ops::detail::Backend& backend_;
  std::size_t bytes_;
  void* data_;
  Var var_;
};

}  // namespace

void ops::detail::copy_between(const Tensor& src, const Tensor& dst) {
  const Device from = src.device(), to = dst.device();
  Engine& engine = src.engine();
  const void* s = src.data();
  void* d = dst.data();
  const std::size_t bytes = src.nbytes();

  if (from == to) {
    ops::copy(src, dst);
  } else if (!from.is_cpu() && !to.is_cpu() && from.kind != to.kind) {
    // No direct path between kinds (CUDA and emulated): through the host.
    copy_between(src.copy_to(Device::cpu()), dst);
  } else if (!from.is_cpu() && !to.is_cpu()) {
    const auto& backend = ops::detail::backend_for(from);
    push_op("copy_to", engine, from, Access().read(src).write(dst),
            [&backend, to, d, from, s, bytes](RunContext& ctx) {
              backend.copy_peer(to, d, from, s, bytes, ctx.stream);
            },
            OpProperty::DeviceToDevice);
  } else if (from.is_cpu()) {
    const auto& backend = ops::detail::backend_for(to);
    if (!backend.needs_host_staging() || TensorAccess::storage(src)->staged_for(backend)) {
      push_op("copy_to", engine, to, Access().read(src).write(dst),
              [&backend, to, d, s, bytes](RunContext& ctx) { backend.upload(to, d, s, bytes, ctx.stream); },
              OpProperty::CopyToDevice);
      return;
    }
    // A CPU op fills pinned staging (so the copy can overlap), then the
    // device's copy stream uploads it.
    StagingBuffer staging(engine, backend, bytes);
    void* st = staging.data();
    engine.push([st, s, bytes](RunContext&) { if (bytes) std::memcpy(st, s, bytes); }, {src.var()},
                {staging.var()}, {.name = "copy_to:stage"});
    engine.push([&backend, to, d, st, bytes](RunContext& ctx) { backend.upload(to, d, st, bytes, ctx.stream); },
                {staging.var()}, {dst.var()},
                {.name = "copy_to", .device = to, .property = OpProperty::CopyToDevice});
  } else {
    const auto& backend = ops::detail::backend_for(from);
    if (!backend.needs_host_staging() || TensorAccess::storage(dst)->staged_for(backend)) {
      push_op("copy_to", engine, from, Access().read(src).write(dst),
              [&backend, from, d, s, bytes](RunContext& ctx) { backend.download(from, d, s, bytes, ctx.stream); },
              OpProperty::CopyFromDevice);
      return;
    }
    StagingBuffer staging(engine, backend, bytes);
    void* st = staging.data();
    engine.push([&backend, from, st, s, bytes](RunContext& ctx) { backend.download(from, st, s, bytes, ctx.stream); },
                {src.var()}, {staging.var()},
                {.name = "copy_to", .device = from, .property = OpProperty::CopyFromDevice});
    engine.push([d, st, bytes](RunContext&) { if (bytes) std::memcpy(d, st, bytes); }, {staging.var()},
                {dst.var()}, {.name = "copy_to:unstage"});
  }
}

namespace {

void check_shape(const Shape& shape) {
  for (std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("Tensor: negative dimension in shape " + shape_to_string(shape));
  }
}

// An uninitialised CPU tensor to be copied to or from `device`: in its
// staging memory where it has one, so that the copy needs no staging buffer.
Tensor host_tensor_for(Engine& engine, Shape shape, DType dtype, Device device) {
  check_shape(shape);
  if (!device.is_cpu() && ops::detail::backend_for(device).needs_host_staging()) {
    const std::size_t bytes = static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
    return TensorAccess::make(detail::TensorStorage::make_staged(engine, bytes, device), std::move(shape), dtype);
  }
  return Tensor::empty(engine, std::move(shape), dtype, Device::cpu());
}

// A CPU tensor filled by `value(i)` in a CPU operation, copied to `device`.
template <class ValueAt>
Tensor generated(Engine& engine, Shape shape, DType dtype, Device device, const char* name,
                 ValueAt value) {
  Tensor host = host_tensor_for(engine, std::move(shape), dtype, device);
  void* p = host.data();
  engine.push(
      [p, n = host.numel(), dtype, value](RunContext&) {
        for (std::int64_t i = 0; i < n; ++i) ops::detail::store_from_double(dtype, p, i, value(i));
      },
      {}, {host.var()}, {.name = name});
  return device.is_cpu() ? host : host.copy_to(device);
}

template <class T>
Tensor from_host_impl(Engine& engine, std::span<const T> values, Shape shape, Device device) {
  check_shape(shape);
  if (static_cast<std::int64_t>(values.size()) != shape_numel(shape)) {
    throw std::invalid_argument("Tensor::from_host: " + std::to_string(values.size()) +
                                " values for shape " + shape_to_string(shape));
  }
  Tensor host = host_tensor_for(engine, std::move(shape), dtype_of<T>(), device);
  // Nothing can touch a fresh variable yet, so the frontend may fill it directly.
  if (!values.empty()) std::memcpy(host.data(), values.data(), values.size_bytes());
  return device.is_cpu() ? host : host.copy_to(device);
}

}  // namespace

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Tensor Tensor::empty(Engine& engine, Shape shape, DType dtype, Device device) {
  check_shape(shape);
  const std::size_t bytes = static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
  return Tensor(detail::TensorStorage::make(engine, device, bytes), std::move(shape), dtype);
}

Tensor Tensor::zeros(Engine& engine, Shape shape, DType dtype, Device device) {
  return full(engine, std::move(shape), 0.0, dtype, device);
}

Tensor Tensor::full(Engine& engine, Shape shape, double value, DType dtype, Device device) {
  Tensor t = empty(engine, std::move(shape), dtype, device);
  ops::fill(t, value);
  return t;
}

Tensor Tensor::uniform(Engine& engine, Shape shape, std::uint64_t seed, double low, double high,
                       DType dtype, Device device) {
  return generated(engine, std::move(shape), dtype, device, "uniform", [=](std::int64_t i) {
    return low + (high - low) * ops::detail::counter_uniform(seed, static_cast<std::uint64_t>(i));
  });
}

Tensor Tensor::normal(Engine& engine, Shape shape, std::uint64_t seed, double mean, double stddev,
                      DType dtype, Device device) {
  return generated(engine, std::move(shape), dtype, device, "normal", [=](std::int64_t i) {
    return mean + stddev * ops::detail::counter_normal(seed, static_cast<std::uint64_t>(i));
  });
}

Tensor Tensor::from_host(Engine& engine, std::span<const float> values, Shape shape, Device device) {
  return from_host_impl(engine, values, std::move(shape), device);
}
Tensor Tensor::from_host(Engine& engine, std::span<const double> values, Shape shape, Device device) {
  return from_host_impl(engine, values, std::move(shape), device);
}
Tensor Tensor::from_host(Engine& engine, std::span<const std::int32_t> values, Shape shape,
                         Device device) {
  return from_host_impl(engine, values, std::move(shape), device);
}

std::int64_t Tensor::numel() const { return shape_numel(shape_); }
Device Tensor::device() const { return storage_->device(); }
Engine& Tensor::engine() const { return storage_->engine(); }
Var Tensor::var() const { return storage_->var(); }
void* Tensor::data() const { return storage_->memory(); }

std::string Tensor::describe() const {
  if (!defined()) return "null tensor";
  return std::string(dtype_name(dtype_)) + shape_to_string(shape_) + " on " + device().to_string();
}

Tensor Tensor::reshape(Shape shape) const {
  check_shape(shape);
  if (!defined() || shape_numel(shape) != numel()) {
    throw std::invalid_argument("Tensor::reshape: cannot view " + describe() + " as " +
                                shape_to_string(shape));
  }
  return Tensor(storage_, std::move(shape), dtype_);
}

Tensor Tensor::copy_to(Device device) const {
  if (!defined()) throw std::invalid_argument("Tensor::copy_to: null tensor");
  Tensor dst = device.is_cpu() ? host_tensor_for(engine(), shape_, dtype_, this->device())
                                : empty(engine(), shape_, dtype_, device);
  ops::detail::copy_between(*this, dst);
  return dst;
}

template <class T>
std::vector<T> Tensor::to_host() const {
  if (!defined()) throw std::invalid_argument("Tensor::to_host: null tensor");
  const Tensor host = device().is_cpu() ? *this : copy_to(Device::cpu());
  try {
    engine().wait_to_read(host.var());
  } catch (...) {
    // The copy failed because this tensor did: report the error on this
    // tensor too, so that it is not raised again by its next blocker.
    if (host.var() != var()) {
      try {
        engine().wait_to_read(var());
      } catch (...) {
      }
    }
    throw;
  }
  std::vector<T> out(static_cast<std::size_t>(numel()));
  ops::detail::cpu_backend().convert(dtype_, host.data(), dtype_of<T>(), out.data(), numel(), nullptr);
  return out;
}

template <class T>
T Tensor::item() const {
  if (defined() && numel() != 1) {
    throw std::invalid_argument("Tensor::item: " + describe() + " does not have one element");
  }
  return to_host<T>()[0];
}

template std::vector<float> Tensor::to_host<float>() const;
template std::vector<double> Tensor::to_host<double>() const;
template std::vector<std::int32_t> Tensor::to_host<std::int32_t>() const;
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template std::int32_t Tensor::item<std::int32_t>() const;

}  // namespace depengine
