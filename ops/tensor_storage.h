#pragma once
// The storage behind Tensor handles: one buffer and the engine variable that
// orders every operation on it. Its destructor (the last handle going)
// deletes the variable and frees the buffer in the deletion's release step,
// i.e. only once every earlier operation on it has completed.

#include "depengine/engine.h"
#include "depengine/tensor.h"
#include "ops/backend.h"

namespace depengine::detail {

struct TensorStorage {
  TensorStorage(Engine& engine, Device device, std::size_t bytes);
  /// CPU storage in the staging memory of `device`'s backend (pinned host
  /// memory on CUDA), which that device copies to and from directly.
  TensorStorage(Engine& engine, std::size_t bytes, Device staged_for);
  ~TensorStorage();
  TensorStorage(const TensorStorage&) = delete;
  TensorStorage& operator=(const TensorStorage&) = delete;

  Engine* engine;
  Device device;
  const ops::detail::Backend* backend;
  std::size_t bytes;
  void* data;
  Var var;
  /// Set for CPU storage in this backend's staging memory.
  const ops::detail::Backend* staged_for = nullptr;
};

}  // namespace depengine::detail
