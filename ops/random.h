#pragma once
// A counter-based generator: value i of a seeded stream is a pure function of
// (seed, i), so random tensors are the same on every device and whatever
// order (or thread) generates them.

#include <cmath>
#include <cstdint>
#include <numbers>

namespace depengine::ops::detail {

inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1) with 53 random bits.
inline double counter_uniform(std::uint64_t seed, std::uint64_t i) {
  return static_cast<double>(splitmix64(splitmix64(seed) ^ splitmix64(i)) >> 11) * 0x1p-53;
}

/// Standard normal by Box-Muller from the uniforms 2i and 2i+1.
inline double counter_normal(std::uint64_t seed, std::uint64_t i) {
  const double u1 = 1.0 - counter_uniform(seed, 2 * i);  // in (0, 1]: log is finite
  const double u2 = counter_uniform(seed, 2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace depengine::ops::detail
