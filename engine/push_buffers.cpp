#include "engine/push_buffers.h"

namespace depengine::detail {

PushBuffers::~PushBuffers() {
  for_each([](PushBuffer& buffer) { delete &buffer; });
}

PushBuffer* PushBuffers::find_or_make() {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = by_thread_.try_emplace(std::this_thread::get_id(), nullptr);
  if (inserted) {
    const std::size_t n = count_.load(std::memory_order_relaxed);
    if (n < kMaxBuffers) {
      it->second = new PushBuffer(sealed_);
      buffers_[n].store(it->second, std::memory_order_release);
      count_.store(n + 1, std::memory_order_release);
    }
  }
  t_last = {engine_id_, it->second};
  return it->second;
}

}  // namespace depengine::detail
