#pragma once
// The sums behind the CPU reductions, written so that g++ -O3 vectorises them
// without -ffast-math (which it needs to reorder a single accumulator) and so
// that they read memory in address order, at the speed of a copy. They add in
// double whatever the element type: float32 sums of many terms lose digits.

#include <algorithm>
#include <array>
#include <cstdint>

namespace depengine::ops::detail {

// Independent accumulators: one addition chain would be bound by the adder's
// latency, and several let the compiler fill vector registers with them.
inline constexpr std::int64_t kSumLanes = 8;
// Below this many elements, lanes alone; above it, halves summed recursively
// (pairwise), so the rounding error grows with log(n) instead of n.
inline constexpr std::int64_t kPairwiseLeaf = 512;

template <class T>
double lane_sum(const T* x, std::int64_t n) {
  std::array<double, kSumLanes> lanes{};
  std::int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (std::int64_t k = 0; k < kSumLanes; ++k) lanes[k] += static_cast<double>(x[i + k]);
  }
  for (; i < n; ++i) lanes[0] += static_cast<double>(x[i]);
  double total = 0;
  for (const double lane : lanes) total += lane;
  return total;
}

template <class T>
double contiguous_sum(const T* x, std::int64_t n) {
  if (n <= kPairwiseLeaf) return lane_sum(x, n);
  // Split on a whole number of lane groups so that each half's loop has no tail.
  const std::int64_t half = n / 2 / kSumLanes * kSumLanes;
  return contiguous_sum(x, half) + contiguous_sum(x + half, n - half);
}

/// x seen as [len, inner]: out[i] = scale * sum_j x[j, i]. Rows are walked in
/// order, each adding into a run of column accumulators small enough to stay
/// in the L1 cache while every row passes over it.
template <class T>
void strided_sums(const T* x, std::int64_t len, std::int64_t inner, double scale, T* out) {
  constexpr std::int64_t kColumns = 512;
  std::array<double, kColumns> acc;
  for (std::int64_t c0 = 0; c0 < inner; c0 += kColumns) {
    const std::int64_t width = std::min(kColumns, inner - c0);
    std::fill_n(acc.begin(), width, 0.0);
    for (std::int64_t j = 0; j < len; ++j) {
      const T* row = x + j * inner + c0;
      for (std::int64_t i = 0; i < width; ++i) acc[i] += static_cast<double>(row[i]);
    }
    for (std::int64_t i = 0; i < width; ++i) out[c0 + i] = static_cast<T>(scale * acc[i]);
  }
}

}  // namespace depengine::ops::detail
