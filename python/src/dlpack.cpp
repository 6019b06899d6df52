// DLPack (https://dmlc.github.io/dlpack/latest/): `Tensor.__dlpack__` lends a
// tensor's memory to NumPy, PyTorch or JAX without a copy; `from_dlpack`
// copies another library's CPU array into a new tensor (depengine allocates
// and releases its own storage, so it cannot adopt foreign memory).
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <vector>

#include <depengine/ops.h>

#include "python/src/bindings.h"
#include "python/src/convert.h"
#include "python/src/tensor_io.h"

namespace depengine::python {

namespace {

// The ABI structs of dlpack.h: the unversioned "dltensor" capsule (which
// NumPy marks read-only) and, for consumers that ask with max_version >= 1,
// the versioned "dltensor_versioned" one with its flags.
enum DLDeviceType : std::int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };
enum DLDataTypeCode : std::uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4 };
struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
struct DLPackVersion {
  std::uint32_t major;
  std::uint32_t minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  std::uint64_t flags;
  DLTensor dl_tensor;
};
constexpr std::uint64_t kDLPackFlagIsCopied = 1u << 1;

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";
constexpr const char* kVersionedCapsuleName = "dltensor_versioned";
constexpr const char* kUsedVersionedCapsuleName = "used_dltensor_versioned";

// What an exported tensor keeps alive until the consumer lets it go.
struct Export {
  DLManagedTensor managed{};
  DLManagedTensorVersioned versioned{};
  PyTensor tensor;
  std::vector<std::int64_t> shape, strides;
  explicit Export(PyTensor t) : tensor(std::move(t)) {}
};

DLDataType dl_dtype(DType dtype) {
  switch (dtype) {
    case DType::float32: return {kDLFloat, 32, 1};
    case DType::float64: return {kDLFloat, 64, 1};
    case DType::float16: return {kDLFloat, 16, 1};
    case DType::bfloat16: return {kDLBfloat, 16, 1};
    case DType::int32: return {kDLInt, 32, 1};
  }
  return {kDLFloat, 32, 1};
}

DLDevice dl_device(const Tensor& t) {
  const Device d = t.device();
  if (d.is_cpu()) return {kDLCPU, 0};
  if (d.kind == DeviceKind::cuda) return {kDLCUDA, d.index};
  throw nb::buffer_error(("__dlpack__: " + t.describe() +
                          " lives on a device DLPack cannot name; copy it with copy_to('cpu') first")
                             .c_str());
}

void delete_export(DLManagedTensor* managed) {
  // Consumers may call this from any thread; the tensor's handle is safe there.
  delete static_cast<Export*>(managed->manager_ctx);
}

void delete_versioned_export(DLManagedTensorVersioned* managed) {
  delete static_cast<Export*>(managed->manager_ctx);
}

void capsule_destructor(PyObject* capsule) {
  // Still named "dltensor": no consumer took it, so the producer frees it.
  if (PyCapsule_IsValid(capsule, kCapsuleName)) {
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
    managed->deleter(managed);
  }
}

void versioned_capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kVersionedCapsuleName)) {
    auto* managed = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedCapsuleName));
    managed->deleter(managed);
  }
}

bool wants_versioned(nb::handle max_version) {
  if (max_version.is_none()) return false;
  const auto version = nb::cast<std::pair<int, int>>(max_version);
  return version.first >= 1;
}

nb::object to_dlpack(const PyTensor& t, nb::handle stream, nb::handle max_version, nb::handle device, nb::handle copy) {
  (void)stream;  // the wait below finishes the tensor's work on the host: any consumer stream may use it
  if (!t.tensor.defined()) throw nb::value_error("__dlpack__: null tensor");
  Tensor shared = t.tensor;
  const DLDevice where = dl_device(shared);
  if (!device.is_none()) {
    const auto wanted = nb::cast<std::pair<int, int>>(device);
    if (wanted.first != where.device_type || wanted.second != where.device_id) {
      throw nb::buffer_error("__dlpack__: the tensor cannot be exported to another device");
    }
  }
  const bool copied = !copy.is_none() && PyObject_IsTrue(copy.ptr());
  if (copied) {
    GilReleaseIfNeeded unlocked;
    Tensor fresh = Tensor::empty(shared.engine(), shared.shape(), shared.dtype(), shared.device());
    ops::copy(shared, fresh);
    shared = std::move(fresh);
  }
  {
    // The consumer may read and write the memory: every pending operation
    // on it must be over.
    ReleaseGil unlocked;
    shared.engine().wait_to_write(shared.var());
  }
  auto* ctx = new Export(t.with(shared));
  ctx->shape = shared.shape();
  ctx->strides.resize(ctx->shape.size());
  std::int64_t stride = 1;
  for (std::size_t i = ctx->shape.size(); i-- > 0;) {
    ctx->strides[i] = stride;
    stride *= ctx->shape[i];
  }
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = shared.data();
  dl.device = where;
  dl.ndim = static_cast<std::int32_t>(ctx->shape.size());
  dl.dtype = dl_dtype(shared.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  PyObject* capsule = nullptr;
  if (wants_versioned(max_version)) {
    ctx->versioned.version = {1, 0};
    ctx->versioned.manager_ctx = ctx;
    ctx->versioned.deleter = &delete_versioned_export;
    ctx->versioned.flags = copied ? kDLPackFlagIsCopied : 0;  // writable: the memory is shared
    ctx->versioned.dl_tensor = dl;
    capsule = PyCapsule_New(&ctx->versioned, kVersionedCapsuleName, &versioned_capsule_destructor);
  } else {
    ctx->managed.manager_ctx = ctx;
    ctx->managed.deleter = &delete_export;
    capsule = PyCapsule_New(&ctx->managed, kCapsuleName, &capsule_destructor);
  }
  if (capsule == nullptr) {
    delete ctx;
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

DType dtype_from_dl(DLDataType t) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return DType::float32;
    if (t.code == kDLFloat && t.bits == 64) return DType::float64;
    if (t.code == kDLFloat && t.bits == 16) return DType::float16;
    if (t.code == kDLBfloat && t.bits == 16) return DType::bfloat16;
    if (t.code == kDLInt && t.bits == 32) return DType::int32;
  }
  throw nb::type_error(("from_dlpack: unsupported element type (code " + std::to_string(t.code) + ", " +
                        std::to_string(t.bits) + " bits, " + std::to_string(t.lanes) +
                        " lanes); depengine holds float32, float64, float16, bfloat16 and int32")
                           .c_str());
}

PyTensor from_dlpack(nb::handle source, nb::handle device, nb::handle engine) {
  const EngineRef ref = engine_or_default(engine);
  const Device target = parse_device(device);
  nb::object capsule;
  if (PyCapsule_CheckExact(source.ptr())) {
    capsule = nb::borrow(source);
  } else if (nb::hasattr(source, "__dlpack__")) {
    try {
      capsule = source.attr("__dlpack__")(nb::arg("max_version") = nb::make_tuple(1, 0));
    } catch (const nb::python_error& e) {
      if (!e.matches(PyExc_TypeError)) throw;
      capsule = source.attr("__dlpack__")();  // a producer older than DLPack 1.0
    }
  } else {
    throw nb::type_error(("from_dlpack: expected an object with __dlpack__, not " + python_type_name(source)).c_str());
  }
  const bool versioned = PyCapsule_IsValid(capsule.ptr(), kVersionedCapsuleName);
  if (!versioned && !PyCapsule_IsValid(capsule.ptr(), kCapsuleName)) {
    throw nb::value_error("from_dlpack: not an unconsumed DLPack capsule (it may have been used already)");
  }
  DLManagedTensor* managed = nullptr;
  DLManagedTensorVersioned* managed_versioned = nullptr;
  if (versioned) {
    managed_versioned = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule.ptr(), kVersionedCapsuleName));
    if (managed_versioned->version.major > 1) {
      throw nb::value_error("from_dlpack: the producer's DLPack major version is newer than 1");
    }
  } else {
    managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  }
  const DLTensor& dl = versioned ? managed_versioned->dl_tensor : managed->dl_tensor;
  if (dl.device.device_type != kDLCPU && dl.device.device_type != kDLCUDAHost) {
    throw nb::value_error("from_dlpack: only host memory can be imported (copy it to the CPU first)");
  }
  const DType dtype = dtype_from_dl(dl.dtype);
  Shape shape(dl.shape, dl.shape + dl.ndim);
  if (dl.strides != nullptr) {
    std::int64_t expected = 1;
    for (std::int32_t i = dl.ndim; i-- > 0;) {
      if (shape[i] != 1 && dl.strides[i] != expected) {
        throw nb::value_error("from_dlpack: strided arrays are not supported; pass a C-contiguous copy");
      }
      expected *= shape[i];
    }
  }
  const void* data = static_cast<const char*>(dl.data) + dl.byte_offset;
  PyTensor t = from_buffer(ref, data, std::move(shape), dtype, target);
  // Copied: the capsule is consumed, and the producer's memory let go at once.
  if (versioned) {
    PyCapsule_SetName(capsule.ptr(), kUsedVersionedCapsuleName);
    if (managed_versioned->deleter != nullptr) managed_versioned->deleter(managed_versioned);
  } else {
    PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
    if (managed->deleter != nullptr) managed->deleter(managed);
  }
  return t;
}

}  // namespace

void bind_dlpack(nb::module_& m, nb::class_<PyTensor>& cls) {
  cls.def("__dlpack__", &to_dlpack, nb::kw_only(), nb::arg("stream").none() = nb::none(),
          nb::arg("max_version").none() = nb::none(), nb::arg("dl_device").none() = nb::none(), nb::arg("copy").none() = nb::none(),
          "Lends the tensor's memory (CPU or CUDA) as a DLPack capsule, after its pending work;\n"
          "np.from_dlpack(t) then shares it without a copy.");
  cls.def("__dlpack_device__", [](const PyTensor& t) {
    if (!t.tensor.defined()) throw nb::value_error("null tensor");
    const DLDevice d = dl_device(t.tensor);
    return nb::make_tuple(d.device_type, d.device_id);
  });
  m.def("from_dlpack", &from_dlpack, nb::arg("source"), nb::kw_only(), nb::arg("device") = "cpu",
        nb::arg("engine").none() = nb::none(),
        "A tensor holding a copy of a DLPack-capable host array (NumPy, PyTorch, JAX on the CPU).");
}

}  // namespace depengine::python
