#include "ops/cpu/buffer_cache.h"

#include <bit>
#include <mutex>
#include <new>

#include "sync/environment.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A held buffer is poisoned but its link word, so that a use after the
// tensor's deletion still fails under ASan as it would after free().
#define DEPENGINE_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define DEPENGINE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define DEPENGINE_POISON(p, n) ((void)(p), (void)(n))
#define DEPENGINE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace depengine::ops::detail {
namespace {

constexpr std::align_val_t kAlign{BufferCache::kAlignment};
constexpr std::size_t kSmallest = 64;  // one class for every size up to this
constexpr long long kDefaultMegabytes = 256;
constexpr long long kMaxMegabytes = 1 << 20;

void* system_allocate(std::size_t bytes) { return ::operator new(bytes, kAlign); }
void system_free(void* data) { ::operator delete(data, kAlign); }

}  // namespace

int BufferCache::class_of(std::size_t bytes) {
  if (bytes <= kSmallest) return 0;
  // 2^k < bytes <= 2^(k+1): four classes of 2^(k-2) bytes each above 2^k.
  const int k = std::bit_width(bytes - 1) - 1;
  const std::size_t quarter = std::size_t{1} << (k - 2);
  const std::size_t steps = (bytes - (std::size_t{1} << k) + quarter - 1) / quarter;  // 1..4
  return 4 * (k - 6) + static_cast<int>(steps);
}

std::size_t BufferCache::bytes_of_class(int index) {
  if (index == 0) return kSmallest;
  const int k = (index - 1) / 4 + 6;
  const int steps = index - 4 * (k - 6);
  return (std::size_t{1} << k) + static_cast<std::size_t>(steps) * (std::size_t{1} << (k - 2));
}

std::size_t BufferCache::class_bytes(std::size_t bytes) {
  return bytes == 0 || bytes > kLargestClassed ? bytes : bytes_of_class(class_of(bytes));
}

BufferCache::BufferCache(std::size_t capacity) : capacity_(capacity) {}

BufferCache::~BufferCache() { release(); }

void* BufferCache::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  if (bytes > kLargestClassed) return system_allocate(bytes);
  const int index = class_of(bytes);
  const std::size_t size = bytes_of_class(index);
  if (size <= capacity_ / 8) {
    Class& c = classes_[index];
    void* data = nullptr;
    {
      std::lock_guard lock(c.lock);
      data = c.head;
      if (data != nullptr) c.head = *static_cast<void**>(data);
    }
    if (data != nullptr) {
      cached_.fetch_sub(size, std::memory_order_relaxed);
      DEPENGINE_UNPOISON(data, size);
      return data;
    }
  }
  try {
    return system_allocate(size);
  } catch (const std::bad_alloc&) {
    // What we hold may be what the system lacks.
    if (cached_bytes() == 0) throw;
    release();
    return system_allocate(size);
  }
}

void BufferCache::deallocate(void* data, std::size_t bytes) {
  if (data == nullptr) return;
  if (bytes > kLargestClassed) return system_free(data);
  const int index = class_of(bytes);
  const std::size_t size = bytes_of_class(index);
  // Over the capacity by at most one buffer per freeing thread at a time.
  if (size > capacity_ / 8 || cached_.load(std::memory_order_relaxed) + size > capacity_) {
    system_free(data);
    return;
  }
  cached_.fetch_add(size, std::memory_order_relaxed);
  Class& c = classes_[index];
  std::lock_guard lock(c.lock);
  *static_cast<void**>(data) = c.head;
  c.head = data;
  DEPENGINE_POISON(static_cast<char*>(data) + sizeof(void*), size - sizeof(void*));
}

void BufferCache::release() {
  for (int index = 0; index < kClasses; ++index) {
    Class& c = classes_[index];
    void* list = nullptr;
    {
      std::lock_guard lock(c.lock);
      list = c.head;
      c.head = nullptr;
    }
    if (list == nullptr) continue;
    const std::size_t size = bytes_of_class(index);
    while (list != nullptr) {
      void* next = *static_cast<void**>(list);
      DEPENGINE_UNPOISON(list, size);
      system_free(list);
      cached_.fetch_sub(size, std::memory_order_relaxed);
      list = next;
    }
  }
}

BufferCache& cpu_buffer_cache() {
  // Never destroyed: a tensor of a static engine may be freed after any
  // static destructor has run.
  static BufferCache* const cache = new BufferCache(static_cast<std::size_t>(
      depengine::detail::integer_from_environment("DEPENGINE_CPU_CACHE_MB", kDefaultMegabytes, 0, kMaxMegabytes)) << 20);
  return *cache;
}

}  // namespace depengine::ops::detail
