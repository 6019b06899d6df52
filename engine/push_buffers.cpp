#include "engine/push_buffers.h"

namespace depengine::detail {
namespace {

// Engine ids are never reused, so a stale entry is never mistaken for a
// live engine's.
struct LastBuffer {
  std::uint32_t engine_id = 0;
  PushBuffer* buffer = nullptr;
};
thread_local LastBuffer t_last;

}  // namespace

PushBuffers::~PushBuffers() {
  for_each([](PushBuffer& buffer) { delete &buffer; });
}

PushBuffer* PushBuffers::mine() {
  if (t_last.engine_id == engine_id_) return t_last.buffer;
  PushBuffer* buffer = find_or_make();
  t_last = {engine_id_, buffer};
  return buffer;
}

PushBuffer* PushBuffers::mine_if_cached() const {
  return t_last.engine_id == engine_id_ ? t_last.buffer : nullptr;
}

PushBuffer* PushBuffers::find_or_make() {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = by_thread_.try_emplace(std::this_thread::get_id(), nullptr);
  if (inserted) {
    const std::size_t n = count_.load(std::memory_order_relaxed);
    if (n < kMaxBuffers) {
      it->second = new PushBuffer;
      buffers_[n].store(it->second, std::memory_order_release);
      count_.store(n + 1, std::memory_order_release);
    }
  }
  return it->second;
}

}  // namespace depengine::detail
