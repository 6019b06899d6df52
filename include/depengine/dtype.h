#pragma once
/// \file dtype.h
/// `DType`: the element type of a `Tensor`.
///
/// Arithmetic ops take `float32` and `float64`. `float16` and `bfloat16` are
/// storage types: `ops::copy` converts to and from them, and `ops::gemm` reads
/// them as inputs that it multiplies with float32 accumulation (the
/// mixed-precision GEMM). `int32` holds class labels for
/// `ops::softmax_cross_entropy`.
///
/// \code
///   static_assert(depengine::dtype_size(depengine::DType::bfloat16) == 2);
///   std::string s = depengine::dtype_name(depengine::DType::float32);  // "float32"
/// \endcode

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace depengine {

enum class DType : std::uint8_t { float32, float64, float16, bfloat16, int32 };

/// Bytes per element.
constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::float64: return 8;
    case DType::float16:
    case DType::bfloat16: return 2;
    default: return 4;
  }
}

/// "float32", "float64", "float16", "bfloat16", "int32".
constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
    case DType::int32: return "int32";
  }
  return "unknown";
}

}  // namespace depengine
