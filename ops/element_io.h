#pragma once
// Reading and writing one element of any dtype as a double, on the host.
// Narrow types are reached through float, as the CUDA conversions do, so
// both round alike.

#include <bit>
#include <cstdint>

#include "depengine/dtype.h"
#include "ops/half.h"

namespace depengine::ops::detail {

inline double load_as_double(DType t, const void* p, std::int64_t i) {
  switch (t) {
    case DType::float32: return static_cast<const float*>(p)[i];
    case DType::float64: return static_cast<const double*>(p)[i];
    case DType::float16: return half_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case DType::bfloat16: return bfloat16_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case DType::int32: return static_cast<const std::int32_t*>(p)[i];
  }
  return 0;
}

inline void store_from_double(DType t, void* p, std::int64_t i, double v) {
  switch (t) {
    case DType::float32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::float64: static_cast<double*>(p)[i] = v; break;
    case DType::float16:
      static_cast<std::uint16_t*>(p)[i] = float_to_half(static_cast<float>(v));
      break;
    case DType::bfloat16:
      static_cast<std::uint16_t*>(p)[i] = float_to_bfloat16(static_cast<float>(v));
      break;
    case DType::int32: static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(v); break;
  }
}

/// The bits of `value` stored as one element of `t`, in the low bytes.
inline std::uint64_t element_bits(DType t, double value) {
  switch (t) {
    case DType::float32: return std::bit_cast<std::uint32_t>(static_cast<float>(value));
    case DType::float64: return std::bit_cast<std::uint64_t>(value);
    case DType::float16: return float_to_half(static_cast<float>(value));
    case DType::bfloat16: return float_to_bfloat16(static_cast<float>(value));
    case DType::int32: return std::bit_cast<std::uint32_t>(static_cast<std::int32_t>(value));
  }
  return 0;
}

}  // namespace depengine::ops::detail
