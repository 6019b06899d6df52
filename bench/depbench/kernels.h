#pragma once
// The arithmetic the scenarios run inside their operations: single-threaded
// BLAS (parallelism is the engine's job here, not the library's), plain
// loops for elementwise work, a deterministic generator for inputs, and a
// digest to compare the results of two runs bit for bit.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace depbench {

using Floats = std::vector<float>;

/// Makes BLAS use one thread per call; call once before timing anything.
void init_kernels();

/// C[m x n] = alpha * A[m x k] * B[k x n] (+ beta * C), row-major.
void gemm(const float* a, const float* b, float* c, int m, int n, int k, float alpha = 1, float beta = 0,
          bool transpose_a = false, bool transpose_b = false);
/// c = a + b
void add(std::span<const float> a, std::span<const float> b, std::span<float> c);
/// y = alpha * x + y
void axpy(float alpha, std::span<const float> x, std::span<float> y);
/// x = alpha * x
void scale(float alpha, std::span<float> x);
/// x = max(x, 0)
void relu(std::span<float> x);
/// sum of x (double accumulator, fixed order)
double sum(std::span<const float> x);
void copy(std::span<const float> from, std::span<float> to);

/// Deterministic values in [lo, hi), from `seed`.
void fill_uniform(std::span<float> x, std::uint64_t seed, float lo = 0, float hi = 1);
Floats uniform(std::size_t n, std::uint64_t seed, float lo = 0, float hi = 1);

/// FNV-1a over the bytes of `x`, chained from `seed`.
std::uint64_t digest(std::span<const float> x, std::uint64_t seed = 14695981039346656037ull);

}  // namespace depbench
