#pragma once
// The KVStore's own operations on host memory (CPU and emulated-device
// tensors): copying a value between devices and summing a key's local
// values. Each runs on the device of the tensor it writes.

#include <string_view>
#include <vector>

#include "comm/host_math.h"
#include "depengine/tensor.h"

namespace depengine::detail::kv_host_ops {

inline PushOptions on_device_of(const Tensor& t, int priority, std::string_view name) {
  return {.priority = priority,
          .name = name,
          .device = t.device(),
          .property = t.device().is_cpu() ? OpProperty::Normal : OpProperty::DeviceToDevice};
}

/// dst = src (same dtype and element count, any host-memory devices).
inline void copy(const Tensor& src, const Tensor& dst, int priority, std::string_view name) {
  src.engine().push(
      [dtype = src.dtype(), s = src.data(), d = dst.data(), n = src.numel()](RunContext&) {
        host_math::copy(dtype, d, 0, s, 0, n);
      },
      {src.var()}, {dst.var()}, on_device_of(dst, priority, name));
}

/// dst = the sum of `values` (float32 or float64, one shape).
inline void sum(const std::vector<Tensor>& values, const Tensor& dst, int priority, std::string_view name) {
  std::vector<Var> reads;
  std::vector<const void*> sources;
  for (const Tensor& v : values) {
    reads.push_back(v.var());
    sources.push_back(v.data());
  }
  dst.engine().push(
      [dtype = dst.dtype(), sources = std::move(sources), d = dst.data(), n = dst.numel()](RunContext&) {
        host_math::copy(dtype, d, 0, sources[0], 0, n);
        for (std::size_t j = 1; j < sources.size(); ++j) host_math::add(dtype, d, sources[j], 0, n);
      },
      reads, {dst.var()}, on_device_of(dst, priority, name));
}

}  // namespace depengine::detail::kv_host_ops
