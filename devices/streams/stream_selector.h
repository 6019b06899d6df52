#pragma once
// StreamSelector: the policy that picks the stream of an operation on a
// stream device.
//
// Stream indices: [0, compute) normal compute streams, then `high_priority`
// compute streams for operations pushed with a priority above 0, then the
// copy streams host-to-device, device-to-host and device-to-device.
//
// A compute operation goes to the stream of its first predecessor fence that
// lies in its pool: a chain stays on one stream, where ordering is free (no
// event wait). Otherwise it takes the next stream of its pool in turn, so
// independent operations spread over the streams.
//
// Thread safety: choose() may be called from any threads at once.

#include <atomic>
#include <stdexcept>

#include "depengine/executor.h"
#include "depengine/stream_role.h"

namespace depengine::detail {

struct StreamLayout {
  int compute = 2;
  int high_priority = 0;

  int copy_stream(StreamRole role) const { return compute + high_priority + static_cast<int>(role) - 1; }
  int total() const { return compute + high_priority + 3; }
};

class StreamSelector {
 public:
  explicit StreamSelector(StreamLayout layout) : layout_(layout) {
    if (layout.compute < 1 || layout.high_priority < 0) {
      throw std::invalid_argument("depengine: a stream device needs at least one compute stream");
    }
  }

  const StreamLayout& layout() const { return layout_; }

  int choose(const ReadyOp& op) {
    const StreamRole role = stream_role_of(op.property());
    if (role != StreamRole::compute) return layout_.copy_stream(role);
    const bool high = op.priority() > 0 && layout_.high_priority > 0;
    const int first = high ? layout_.compute : 0;
    const int count = high ? layout_.high_priority : layout_.compute;
    for (const Fence& fence : op.fences()) {
      if (fence.stream_index >= first && fence.stream_index < first + count) return fence.stream_index;
    }
    std::atomic<unsigned>& next = high ? next_high_ : next_compute_;
    return first + static_cast<int>(next.fetch_add(1, std::memory_order_relaxed) % static_cast<unsigned>(count));
  }

 private:
  StreamLayout layout_;
  std::atomic<unsigned> next_compute_{0};
  std::atomic<unsigned> next_high_{0};
};

}  // namespace depengine::detail
