#pragma once
// The arithmetic of the collectives' local steps, on host memory (CPU and
// emulated tensors): elements [offset, offset + count) of float32 or
// float64 buffers.

#include <cstdint>
#include <cstring>

#include "depengine/dtype.h"

namespace depengine::detail::host_math {

template <class T>
void add_into(T* dst, const T* src, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

/// dst[offset..] += src[offset..].
inline void add(DType t, void* dst, const void* src, std::int64_t offset, std::int64_t count) {
  if (t == DType::float64) {
    add_into(static_cast<double*>(dst) + offset, static_cast<const double*>(src) + offset, count);
  } else {
    add_into(static_cast<float*>(dst) + offset, static_cast<const float*>(src) + offset, count);
  }
}

/// data[offset..] *= factor.
inline void scale(DType t, void* data, double factor, std::int64_t offset, std::int64_t count) {
  if (t == DType::float64) {
    double* p = static_cast<double*>(data) + offset;
    for (std::int64_t i = 0; i < count; ++i) p[i] *= factor;
  } else {
    float* p = static_cast<float*>(data) + offset;
    const float f = static_cast<float>(factor);
    for (std::int64_t i = 0; i < count; ++i) p[i] *= f;
  }
}

/// Element i of a float32 or float64 buffer.
inline double element(DType t, const void* data, std::int64_t i) {
  return t == DType::float64 ? static_cast<const double*>(data)[i] : static_cast<const float*>(data)[i];
}

/// count elements of `t` from src + src_offset to dst + dst_offset.
inline void copy(DType t, void* dst, std::int64_t dst_offset, const void* src, std::int64_t src_offset,
                 std::int64_t count) {
  const std::size_t size = dtype_size(t);
  if (count > 0) {
    std::memcpy(static_cast<char*>(dst) + dst_offset * size, static_cast<const char*>(src) + src_offset * size,
                static_cast<std::size_t>(count) * size);
  }
}

}  // namespace depengine::detail::host_math
