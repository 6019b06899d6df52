#pragma once
// BufferCache: host memory of freed tensors, kept for the next tensor of
// about the same size. Buffers are taken and given back on different
// threads (the workers that first touch them and run their deletions, a
// frontend's Tensor::data()): through malloc those threads meet on the
// allocator's arena lock and sleep on it (in the MLP training loop, a third
// of the engine's context switches when the frontend allocated). Here a free
// is a push on its size class's list under a short lock, and an allocation
// takes the most recently freed buffer of its class, the one most likely
// still in a cache.
//
// Sizes are rounded up to a class, four per power of two (at most 25% more
// than asked), and the cache holds at most `capacity` bytes: a buffer freed
// beyond that, or bigger than an eighth of it, goes back to the system.

#include <array>
#include <atomic>
#include <cstddef>

#include "sync/short_lock.h"

namespace depengine::ops::detail {

class BufferCache {
 public:
  /// Buffers are aligned to this many bytes.
  static constexpr std::size_t kAlignment = 64;

  explicit BufferCache(std::size_t capacity);
  ~BufferCache();
  BufferCache(const BufferCache&) = delete;
  BufferCache& operator=(const BufferCache&) = delete;

  /// At least `bytes` bytes (nullptr for 0). When the system has no memory
  /// left, gives back what the cache holds and tries again; throws
  /// std::bad_alloc if that fails too.
  void* allocate(std::size_t bytes);
  /// `bytes` as given to the allocate that returned `data`.
  void deallocate(void* data, std::size_t bytes);

  /// Bytes held for reuse now.
  std::size_t cached_bytes() const { return cached_.load(std::memory_order_relaxed); }
  std::size_t capacity() const { return capacity_; }
  /// Gives every held buffer back to the system.
  void release();

  /// The size an allocation of `bytes` really has: its class's.
  static std::size_t class_bytes(std::size_t bytes);

 private:
  // Larger requests, whose class's size would overflow, go straight to the
  // system, which refuses them.
  static constexpr int kLargestClassedLog = 62;
  static constexpr std::size_t kLargestClassed = std::size_t{1} << kLargestClassedLog;
  // One class up to 64 bytes, then four per power of two up to the largest.
  static constexpr int kClasses = 1 + 4 * (kLargestClassedLog - 6);
  static int class_of(std::size_t bytes);
  static std::size_t bytes_of_class(int index);

  // A held buffer's first word links it to the next one of its class.
  struct alignas(64) Class {
    depengine::detail::ShortLock lock;
    void* head = nullptr;
  };

  const std::size_t capacity_;
  std::atomic<std::size_t> cached_{0};
  std::array<Class, kClasses> classes_;
};

/// The process's cache for CPU tensors (the CPU backend's and the emulated
/// devices'): DEPENGINE_CPU_CACHE_MB megabytes (0 turns it off), 256 by
/// default. A bad value throws std::invalid_argument at the first allocation.
BufferCache& cpu_buffer_cache();

}  // namespace depengine::ops::detail
