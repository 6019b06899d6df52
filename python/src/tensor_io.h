#pragma once
// Copies between tensors and host memory, shared by the NumPy and DLPack paths.

#include <nanobind/nanobind.h>

#include "python/src/handles.h"

namespace depengine::python {

/// Blocks for the tensor's pending writes, then returns a NumPy copy
/// (bfloat16 comes back as float32, which NumPy has).
nanobind::object to_numpy(const PyTensor& t);

/// A tensor on `device` holding a copy of C-ordered host data of `dtype`.
PyTensor from_buffer(const EngineRef& engine, const void* data, Shape shape, DType dtype, Device device);

}  // namespace depengine::python
