#pragma once
// Integer-valued inputs of the collectives' tests: sums of them are exact in
// float32 and float64 in any order, so results compare bit for bit with a
// host reference.

#include <cstdint>
#include <span>
#include <vector>

#include <depengine/comm.h>
#include <depengine/tensor.h>

namespace depengine {

/// Element i of rank `rank`'s tensor in test `salt`: an integer in [-50, 50].
inline double value_at(int rank, std::int64_t i, int salt) {
  return static_cast<double>(static_cast<int>((i * 7 + rank * 13 + salt * 31) % 101) - 50);
}

inline Tensor make_input(Engine& engine, int rank, std::int64_t n, DType dtype, Device device, int salt = 0) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value_at(rank, i, salt);
  if (dtype == DType::float64) return Tensor::from_host(engine, std::span<const double>(v), {n}, device);
  std::vector<float> f(v.begin(), v.end());
  return Tensor::from_host(engine, std::span<const float>(f), {n}, device);
}

/// What the reduced element is in `dtype`: the exact sum, times 1/ranks for
/// a mean (as the host ring computes it).
inline double reduced(double sum, ReduceOp op, int ranks, DType dtype) {
  if (op == ReduceOp::sum) return sum;
  if (dtype == DType::float32) return static_cast<float>(sum) * static_cast<float>(1.0 / ranks);
  return sum * (1.0 / ranks);
}

}  // namespace depengine
