#pragma once
// KvBufferPool: a server shard's host buffers for received payloads, given
// back once no operation uses them any more. Each received push needs a
// buffer of its own (it is merged into, then becomes the stored value); a
// fresh allocation of a large one costs the kernel a page fault and a
// zeroed page for every 4 KiB the receive writes, at a few MiB per part.
// A buffer taken from the pool keeps its pages.
//
// Callable from any thread: take() on the node's, the recycling operation
// on whichever thread ends the buffer's last use.

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "depengine/engine.h"
#include "depengine/tensor.h"

namespace depengine::detail {

class KvBufferPool : public std::enable_shared_from_this<KvBufferPool> {
 public:
  /// `engine` is the shard's; `device` the inline device its small operations run on.
  KvBufferPool(Engine& engine, Device device) : engine_(engine), device_(device) {}

  /// A buffer of `count` elements of `dtype`: a pooled one, else a new one.
  Tensor take(std::int64_t count, DType dtype) {
    {
      std::lock_guard lock(mutex_);
      auto it = free_.find({count, dtype});
      if (it != free_.end() && !it->second.empty()) {
        Tensor buffer = std::move(it->second.back());
        it->second.pop_back();
        pooled_bytes_ -= buffer.nbytes();
        return buffer;
      }
    }
    return Tensor::empty(engine_, {count}, dtype);
  }

  /// Gives `buffer` (one of take()'s, no longer referenced by the shard)
  /// back once every operation pushed on it so far has ended. Beyond
  /// kMaxPooledBytes it is simply dropped (freed after those operations).
  void recycle(Tensor buffer) {
    if (!buffer.defined() || buffer.nbytes() == 0) return;
    {
      std::lock_guard lock(mutex_);
      if (pooled_bytes_ + buffer.nbytes() > kMaxPooledBytes) return;
    }
    const Var var = buffer.var();
    engine_.push(
        [pool = shared_from_this(), buffer = std::move(buffer)](RunContext&) mutable { pool->put(std::move(buffer)); },
        {}, {var}, {.name = "kvstore:recycle", .device = device_});
  }

 private:
  // A bound on what the pool keeps: about the stored values of the busiest
  // keys; more is freed as before.
  static constexpr std::size_t kMaxPooledBytes = std::size_t{256} << 20;

  void put(Tensor buffer) {
    std::lock_guard lock(mutex_);
    pooled_bytes_ += buffer.nbytes();
    free_[{buffer.numel(), buffer.dtype()}].push_back(std::move(buffer));
  }

  Engine& engine_;
  const Device device_;
  std::mutex mutex_;
  std::map<std::pair<std::int64_t, DType>, std::vector<Tensor>> free_;
  std::size_t pooled_bytes_ = 0;
};

}  // namespace depengine::detail
