#pragma once
// The parts of the extension module, each adding its names to `m`.

#include <nanobind/nanobind.h>

#include "python/src/handles.h"

namespace depengine::python {

void bind_engine(nanobind::module_& m);
nanobind::class_<PyTensor> bind_tensor(nanobind::module_& m);
void bind_ops(nanobind::module_& m);
void bind_dlpack(nanobind::module_& m, nanobind::class_<PyTensor>& tensor_class);
void bind_profiler(nanobind::module_& m);
void bind_comm(nanobind::module_& m);
void bind_kvstore(nanobind::module_& m);
/// After bind_engine: adds Engine.capture and Engine.replay.
void bind_graph(nanobind::module_& m);

}  // namespace depengine::python
