#pragma once
// BlockCache: freed memory blocks kept for reuse, by size class. Sizes are
// rounded up to a class (powers of two up to 1 MiB, then multiples of 2 MiB)
// so that a freed block fits the next request of a similar size.
//
// Mechanism only: the caller allocates, frees and decides when a block is
// safe to reuse. Thread safety: all members may be called concurrently.

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace depengine::detail {

class BlockCache {
 public:
  static std::size_t size_class(std::size_t bytes) {
    constexpr std::size_t kMin = 512, kSmall = std::size_t{1} << 20, kLarge = std::size_t{2} << 20;
    if (bytes > kSmall) return (bytes + kLarge - 1) / kLarge * kLarge;
    std::size_t size = kMin;
    while (size < bytes) size *= 2;
    return size;
  }

  /// A cached block of exactly `size_class` bytes, or null.
  void* take(std::size_t size_class) {
    std::lock_guard lock(mutex_);
    auto it = free_.find(size_class);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* block = it->second.back();
    it->second.pop_back();
    return block;
  }

  void put(void* block, std::size_t size_class) {
    std::lock_guard lock(mutex_);
    free_[size_class].push_back(block);
  }

  /// Empties the cache; the caller frees what it returns.
  std::vector<void*> drain() {
    std::vector<void*> blocks;
    std::lock_guard lock(mutex_);
    for (auto& [size, list] : free_) blocks.insert(blocks.end(), list.begin(), list.end());
    free_.clear();
    return blocks;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
};

}  // namespace depengine::detail
