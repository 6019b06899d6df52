#pragma once
// PushBuffers: an engine's PushBuffer per frontend thread. A thread finds its
// own through a one-entry thread-local cache (the last engine it pushed to);
// flushers walk them all.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "engine/push_buffer.h"

namespace depengine::detail {

class PushBuffers {
 public:
  explicit PushBuffers(std::uint32_t engine_id) : engine_id_(engine_id) {}
  ~PushBuffers();
  PushBuffers(const PushBuffers&) = delete;
  PushBuffers& operator=(const PushBuffers&) = delete;

  /// This thread's buffer, made on its first push; null for threads beyond
  /// kMaxBuffers (they register every push at once).
  PushBuffer* mine() {
    if (t_last.engine_id == engine_id_) [[likely]] return t_last.buffer;
    return find_or_make();
  }
  /// This thread's buffer when it is the last engine the thread pushed to
  /// (a cheap check for a worker's own pushes), else null.
  PushBuffer* mine_if_cached() const { return t_last.engine_id == engine_id_ ? t_last.buffer : nullptr; }

  /// Whether any buffer holds sealed batches (a hint).
  bool any_sealed() const { return sealed_.load(std::memory_order_relaxed) != 0; }

  /// Calls `f` on every buffer (any thread).
  template <typename F>
  void for_each(F&& f) const {
    const std::size_t n = count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i) f(*buffers_[i].load(std::memory_order_acquire));
  }

 private:
  static constexpr std::size_t kMaxBuffers = 256;

  PushBuffer* find_or_make();

  // The last engine this thread pushed to (engine ids are never reused, so
  // a stale entry is never mistaken for a live engine's). Zero-initialized.
  struct LastBuffer {
    std::uint32_t engine_id;
    PushBuffer* buffer;
  };
  static inline thread_local LastBuffer t_last;

  const std::uint32_t engine_id_;
  std::array<std::atomic<PushBuffer*>, kMaxBuffers> buffers_{};
  std::atomic<std::size_t> count_{0};
  std::atomic<std::size_t> sealed_{0};  // batches sealed in any buffer
  std::mutex mutex_;
  std::unordered_map<std::thread::id, PushBuffer*> by_thread_;  // guarded by mutex_
};

}  // namespace depengine::detail
