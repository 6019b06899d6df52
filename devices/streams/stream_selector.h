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
// independent operations spread over the streams. The nodes of a replayed
// graph are placed by the same rule, their predecessors standing for fences.
//
// Thread safety: choose() may be called from any threads at once.

#include <atomic>
#include <cstdint>
#include <ranges>
#include <stdexcept>
#include <vector>

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
    const Pool pool = pool_of(op.priority());
    const int inherited = first_in(pool, op.fences() | std::views::transform(&Fence::stream_index));
    return inherited >= 0 ? inherited : pool.take_turn(next_of(pool).fetch_add(1, std::memory_order_relaxed));
  }

  /// The same rule for the nodes of a stream graph, whose predecessors play
  /// the part of fences; the first node continues from `op`'s fences. The
  /// graph's other nodes without a predecessor in their pool take the
  /// streams after the first node's in turn, so that the graph's
  /// independent chains do not meet on one stream. Returns each node's stream.
  std::vector<int> choose(const ReadyOp& op, const StreamGraph& graph) {
    std::vector<int> stream_of(graph.size());
    unsigned next_in_graph[2] = {0, 0};  // per pool: normal, high
    for (std::uint32_t n = 0; n < graph.size(); ++n) {
      const StreamRole role = stream_role_of(graph.property(n));
      if (role != StreamRole::compute) {
        stream_of[n] = layout_.copy_stream(role);
        continue;
      }
      const Pool pool = pool_of(graph.priority(n));
      const int inherited =
          n == 0 ? first_in(pool, op.fences() | std::views::transform(&Fence::stream_index))
                 : first_in(pool, graph.predecessors(n) | std::views::transform([&](std::uint32_t p) {
                                    return stream_of[p];
                                  }));
      unsigned& next = next_in_graph[pool.high ? 1 : 0];
      if (inherited >= 0) {
        stream_of[n] = inherited;
      } else if (n == 0) {
        stream_of[n] = pool.take_turn(next_of(pool).fetch_add(1, std::memory_order_relaxed));
      } else {
        stream_of[n] = pool.take_turn(next++);
      }
      if (n == 0) next = static_cast<unsigned>(stream_of[0] - pool.first + 1);
    }
    return stream_of;
  }

 private:
  // The compute streams an operation may take: normal or high priority.
  struct Pool {
    int first;
    int count;
    bool high;
    bool holds(int stream) const { return stream >= first && stream < first + count; }
    int take_turn(unsigned turn) const { return first + static_cast<int>(turn % static_cast<unsigned>(count)); }
  };

  Pool pool_of(int priority) const {
    const bool high = priority > 0 && layout_.high_priority > 0;
    return high ? Pool{layout_.compute, layout_.high_priority, true} : Pool{0, layout_.compute, false};
  }
  std::atomic<unsigned>& next_of(const Pool& pool) { return pool.high ? next_high_ : next_compute_; }

  /// The first of `streams` in `pool`, or -1.
  template <class Streams>
  static int first_in(const Pool& pool, Streams&& streams) {
    for (const int stream : streams) {
      if (pool.holds(stream)) return stream;
    }
    return -1;
  }

  StreamLayout layout_;
  std::atomic<unsigned> next_compute_{0};
  std::atomic<unsigned> next_high_{0};
};

}  // namespace depengine::detail
