#pragma once
// The storage behind Tensor handles: one buffer and the engine variable that
// orders every operation on it. When the last handle goes, the variable is
// deleted; the deletion's release step, which runs once every earlier
// operation on it has completed, frees the buffer and the storage itself, so
// an operation may reach the storage while it runs.
//
// CPU memory is allocated at the first touch, not at creation: by the first
// operation that runs on it (on the worker that runs it, from the buffers that
// worker freed moments before, still in its cache), or by Tensor::data(). A
// frontend that runs an epoch ahead would otherwise take an epoch's worth of
// buffers, cold by the time the workers write them. Other devices' memory, and
// CPU memory staged for a device, are allocated at creation.

#include <atomic>
#include <memory>

#include "depengine/engine.h"
#include "depengine/tensor.h"
#include "ops/backend.h"

namespace depengine::detail {

class TensorStorage {
 public:
  static std::shared_ptr<TensorStorage> make(Engine& engine, Device device, std::size_t bytes);
  /// CPU storage in the staging memory of `device`'s backend (pinned host
  /// memory on CUDA), which that device copies to and from directly.
  static std::shared_ptr<TensorStorage> make_staged(Engine& engine, std::size_t bytes, Device staged_for);
  TensorStorage(const TensorStorage&) = delete;
  TensorStorage& operator=(const TensorStorage&) = delete;

  /// The memory, allocated now if nothing touched it yet (any thread; two
  /// first touches at once agree on one buffer). Throws std::bad_alloc.
  void* memory();

  Engine& engine() const { return *engine_; }
  Device device() const { return device_; }
  Var var() const { return var_; }
  /// Whether this is CPU storage in the staging memory of `backend`.
  bool staged_for(const ops::detail::Backend& backend) const { return staged_for_ == &backend; }

 private:
  TensorStorage(Engine& engine, Device device, std::size_t bytes, const ops::detail::Backend* staged_for);
  ~TensorStorage() = default;
  // Both kinds: memory now unless it is plain CPU memory, then the variable.
  static std::shared_ptr<TensorStorage> make_with(Engine& engine, Device device, std::size_t bytes,
                                                  const ops::detail::Backend* staged_for);
  void give_back(void* data) const noexcept;
  // Frees the memory and the storage.
  struct Discard {
    void operator()(TensorStorage* storage) const noexcept;
  };
  // The shared_ptr's deleter: deletes the variable, whose release discards.
  static void retire(TensorStorage* storage) noexcept;

  Engine* engine_;
  Device device_;
  const ops::detail::Backend* backend_;
  const ops::detail::Backend* staged_for_;  // set for CPU storage in that backend's staging memory
  std::size_t bytes_;
  std::atomic<void*> data_{nullptr};
  Var var_;
};

/// The ops library's view of a Tensor's storage.
struct TensorAccess {
  static TensorStorage* storage(const Tensor& t) { return t.storage_.get(); }
  static Tensor make(std::shared_ptr<TensorStorage> storage, Shape shape, DType dtype) {
    return Tensor(std::move(storage), std::move(shape), dtype);
  }
};

}  // namespace depengine::detail
