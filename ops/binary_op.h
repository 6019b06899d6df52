#pragma once
// The arithmetic of ops::add, ops::sub and ops::mul. Its own header because
// the CUDA kernels (built as C++17) include it without the C++20 public API.

#include <cstdint>

namespace depengine::ops::detail {

enum class BinaryOp : std::uint8_t { add, sub, mul };

}  // namespace depengine::ops::detail
