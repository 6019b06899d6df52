#pragma once
// Integer-valued test tensors for the KVStore's tests: sums of them are exact
// in float32 and float64 alike, so results compare bit for bit with a host
// reference.

#include <cstdint>
#include <span>
#include <vector>

#include <depengine/ops.h>
#include <depengine/tensor.h>

/// The value at `i` of the tensor that `slot` (a device or a process's
/// device) pushes for `key` in `round`.
inline double value_at(int key, int slot, int round, std::int64_t i) {
  return static_cast<double>(static_cast<int>((i * 7 + key * 3 + slot * 13 + round * 31) % 41) - 20);
}

inline depengine::Tensor tensor_of(depengine::Engine& engine, std::int64_t n, depengine::DType dtype,
                                   depengine::Device device, int key, int slot, int round) {
  std::vector<double> host(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) host[static_cast<std::size_t>(i)] = value_at(key, slot, round, i);
  const depengine::Tensor t = depengine::Tensor::from_host(engine, std::span<const double>(host), {n}, device);
  return dtype == depengine::DType::float64 ? t : depengine::ops::cast(t, dtype);
}

inline std::vector<double> host_of(const depengine::Tensor& t) {
  if (t.dtype() == depengine::DType::float64) return t.to_host<double>();
  std::vector<float> f = t.to_host<float>();
  return {f.begin(), f.end()};
}
