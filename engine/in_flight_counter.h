#pragma once
// InFlightCounter: how many operations are pushed but not completed, counted
// without a shared hot cache line. Each thread adds to its own stripe; a
// reader sums. Used for back-pressure and wait_all, never per operation.
//
// Exactness: reading every completion stripe first and every push stripe
// second, equal sums mean the engine was idle at the moment between the two
// passes (each counter only grows, and an operation's push is counted before
// it can complete). Pushes may also be counted elsewhere (a PushBuffer
// counts its own, without an atomic read-modify-write), under the same
// rules: the caller passes what reads those counts.

#include <array>
#include <atomic>
#include <cstdint>

namespace depengine::detail {

class InFlightCounter {
 public:
  void add_pushed() { stripe().pushed.fetch_add(1, std::memory_order_seq_cst); }
  void add_completed() { stripe().completed.fetch_add(1, std::memory_order_seq_cst); }

  /// Operations completed so far (a measure of the workers' progress).
  std::uint64_t completed() const {
    std::uint64_t completed = 0;
    for (const Stripe& s : stripes_) completed += s.completed.load(std::memory_order_relaxed);
    return completed;
  }

  /// Operations pushed so far, as far as this counter counts them.
  std::uint64_t pushed() const {
    std::uint64_t pushed = 0;
    for (const Stripe& s : stripes_) pushed += s.pushed.load(std::memory_order_relaxed);
    return pushed;
  }

  /// Operations in flight; 0 means the engine was idle at some instant
  /// during the call. `pushed_elsewhere()` returns the pushes counted
  /// outside this counter.
  template <typename PushedElsewhere>
  std::int64_t in_flight(PushedElsewhere&& pushed_elsewhere) const {
    std::int64_t completed = 0, pushed = 0;
    for (const Stripe& s : stripes_) completed += s.completed.load(std::memory_order_seq_cst);
    for (const Stripe& s : stripes_) pushed += s.pushed.load(std::memory_order_seq_cst);
    pushed += static_cast<std::int64_t>(pushed_elsewhere());
    return pushed - completed;
  }

 private:
  static constexpr int kStripes = 32;
  struct alignas(64) Stripe {
    std::atomic<std::uint64_t> pushed{0};
    std::atomic<std::uint64_t> completed{0};
  };

  static int thread_stripe();
  Stripe& stripe() { return stripes_[thread_stripe()]; }

  std::array<Stripe, kStripes> stripes_;
};

inline int InFlightCounter::thread_stripe() {
  static std::atomic<int> next{0};
  thread_local const int index = next.fetch_add(1, std::memory_order_relaxed) % kStripes;
  return index;
}

}  // namespace depengine::detail
