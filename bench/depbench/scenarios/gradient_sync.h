#pragma once
// What the gradient_sync scenario shows beyond the common columns: its
// strategies (in the order it runs them), the metrics it records for each,
// and the gradients it aggregates, so that the table, the chart and the
// tests read the same names and can rebuild the expected sums.

#include <cstdint>
#include <string>
#include <vector>

namespace depbench::gradient_sync {

/// Every strategy the scenario knows, in run order. A run records the ones
/// that apply to its launch: one_device, ring and kvstore_local in one
/// process; one_device, ring, ps_one_server and ps_co_located under mpirun.
const std::vector<std::string>& strategies();

/// The metric of `strategy`: "seconds" (its time), "ideal_s" (bytes on its
/// bottleneck link / link bandwidth), "vs_ideal" (seconds / ideal_s),
/// "bottleneck_mib" (those bytes), "shared_memory_s" (the bytes of all its
/// links together / link bandwidth: what it costs where the links take
/// turns on one memory, as emulated devices on few cores do) or
/// "checksum" (the sum of every element of every local device's
/// aggregated gradients).
std::string metric(const std::string& strategy, const std::string& what);

/// The gradients' layer sizes (elements) at `size`: a small convolutional
/// network's weights, biases and classifier, each scaled by `size`, at
/// least one element.
std::vector<double> layer_counts(double size);

/// Element `i` of layer `layer`'s gradient on rank `rank` (local device d
/// of process p is rank p * devices + d): a small integer, so that every
/// strategy's sum is exact whatever its order.
inline float gradient_value(int rank, int layer, std::int64_t i) {
  return static_cast<float>((i * 7 + layer * 13 + rank * 5) % 17) - 8.0f;
}

}  // namespace depbench::gradient_sync
