#include "bench/depbench/kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <cblas.h>

namespace depbench {

void init_kernels() {
  // Every kernel single-threaded, the ops library's GEMMs too (which would
  // otherwise take the cores' share of their engine's workers): each
  // scenario's ideal is computed from serial parts.
  if (!std::getenv("DEPENGINE_BLAS_THREADS")) setenv("DEPENGINE_BLAS_THREADS", "1", 1);
  openblas_set_num_threads(1);
  // The first call initialises the library: keep that out of every timing.
  Floats a(64 * 64, 1.0f), c(64 * 64);
  gemm(a.data(), a.data(), c.data(), 64, 64, 64);
}

void gemm(const float* a, const float* b, float* c, int m, int n, int k, float alpha, float beta, bool transpose_a,
          bool transpose_b) {
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans, m, n,
              k, alpha, a, transpose_a ? m : k, b, transpose_b ? k : n, beta, c, n);
}

void add(std::span<const float> a, std::span<const float> b, std::span<float> c) {
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = a[i] + b[i];
}

void axpy(float alpha, std::span<const float> x, std::span<float> y) {
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += alpha * x[i];
}

void scale(float alpha, std::span<float> x) {
  for (float& v : x) v *= alpha;
}

void relu(std::span<float> x) {
  for (float& v : x) v = std::max(v, 0.0f);
}

double sum(std::span<const float> x) {
  double s = 0;
  for (float v : x) s += v;
  return s;
}

void copy(std::span<const float> from, std::span<float> to) { std::memcpy(to.data(), from.data(), to.size_bytes()); }

void fill_uniform(std::span<float> x, std::uint64_t seed, float lo, float hi) {
  // splitmix64: cheap, and the same sequence on every platform.
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  const float span = hi - lo;
  for (float& v : x) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    v = lo + span * static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
  }
}

Floats uniform(std::size_t n, std::uint64_t seed, float lo, float hi) {
  Floats x(n);
  fill_uniform(x, seed, lo, hi);
  return x;
}

std::uint64_t digest(std::span<const float> x, std::uint64_t h) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(x.data());
  for (std::size_t i = 0; i < x.size_bytes(); ++i) {
    h ^= bytes[i];
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace depbench
