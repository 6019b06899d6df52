// The host buffer cache behind CPU tensors (ops/cpu/buffer_cache.h): size
// classes, reuse, its capacity, and buffers handed between threads.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "depengine/ops.h"
#include "depengine/tensor.h"
#include "ops/cpu/buffer_cache.h"

namespace depengine::ops::detail {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(BufferCache, AClassHoldsTheSizeAskedAndAtMostAQuarterMore) {
  std::size_t previous = 0;
  for (std::size_t bytes = 1; bytes < (std::size_t{1} << 26); bytes += 1 + bytes / 7) {
    const std::size_t size = BufferCache::class_bytes(bytes);
    EXPECT_GE(size, bytes);
    if (bytes > 64) EXPECT_LE(size, bytes + bytes / 4) << bytes;
    EXPECT_GE(size, previous) << bytes;  // monotonic
    EXPECT_EQ(BufferCache::class_bytes(size), size) << bytes;  // a class's size is its own class
    previous = size;
  }
  EXPECT_EQ(BufferCache::class_bytes(0), 0u);
  EXPECT_EQ(BufferCache::class_bytes(64), 64u);
  EXPECT_EQ(BufferCache::class_bytes(65), 80u);
  EXPECT_EQ(BufferCache::class_bytes(1000), 1024u);
  EXPECT_EQ(BufferCache::class_bytes(1025), 1280u);
  // The largest class, and above it sizes left as asked (the system refuses them).
  const std::size_t largest = std::size_t{1} << 62;
  EXPECT_EQ(BufferCache::class_bytes(largest - 1), largest);
  EXPECT_EQ(BufferCache::class_bytes(largest + 1), largest + 1);
}

TEST(BufferCache, AFreedBufferIsTheNextOneOfItsClassAndAligned) {
  BufferCache cache(64 * kMiB);
  EXPECT_EQ(cache.allocate(0), nullptr);
  void* a = cache.allocate(1000);
  void* b = cache.allocate(1000);
  ASSERT_NE(a, b);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % BufferCache::kAlignment, 0u);
  std::memset(a, 1, 1024);  // the whole class is usable
  cache.deallocate(a, 1000);
  cache.deallocate(b, 1000);
  EXPECT_EQ(cache.cached_bytes(), 2048u);
  // Most recently freed first, for any size of the class.
  EXPECT_EQ(cache.allocate(1010), b);
  EXPECT_EQ(cache.allocate(1024), a);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  // Another class does not take them.
  cache.deallocate(a, 1000);
  void* c = cache.allocate(2000);
  EXPECT_NE(c, a);
  cache.deallocate(c, 2000);
  cache.deallocate(b, 1000);
  cache.release();
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(BufferCache, ItHoldsNoMoreThanItsCapacityNorBuffersAboveAnEighthOfIt) {
  BufferCache cache(kMiB);
  void* big = cache.allocate(kMiB / 4);
  cache.deallocate(big, kMiB / 4);
  EXPECT_EQ(cache.cached_bytes(), 0u) << "above an eighth: back to the system";
  std::vector<void*> buffers;
  for (int i = 0; i < 64; ++i) buffers.push_back(cache.allocate(64 * 1024));
  for (void* p : buffers) cache.deallocate(p, 64 * 1024);
  EXPECT_EQ(cache.cached_bytes(), kMiB) << "16 of the 64 are held";
  BufferCache off(0);
  void* p = off.allocate(100);
  off.deallocate(p, 100);
  EXPECT_EQ(off.cached_bytes(), 0u);
}

TEST(BufferCache, BuffersFreedOnOneThreadServeAnotherWithoutSharingALiveOne) {
  BufferCache cache(16 * kMiB);
  constexpr int kThreads = 4, kRounds = 20000;
  auto work = [&](int id) {
    std::mt19937 random(static_cast<unsigned>(id));
    std::vector<std::pair<unsigned char*, std::size_t>> live;
    for (int round = 0; round < kRounds; ++round) {
      if (live.size() < 8 && (live.empty() || random() % 2 == 0)) {
        const std::size_t bytes = 1 + random() % 5000;
        auto* p = static_cast<unsigned char*>(cache.allocate(bytes));
        std::memset(p, id, bytes);
        live.emplace_back(p, bytes);
      } else {
        const std::size_t i = random() % live.size();
        auto [p, bytes] = live[i];
        // Nobody else wrote into it while it was ours.
        for (std::size_t j = 0; j < bytes; j += 97) ASSERT_EQ(p[j], id);
        cache.deallocate(p, bytes);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    for (auto [p, bytes] : live) cache.deallocate(p, bytes);
  };
  std::vector<std::thread> threads;
  for (int id = 1; id <= kThreads; ++id) threads.emplace_back(work, id);
  for (auto& t : threads) t.join();
  EXPECT_LE(cache.cached_bytes(), cache.capacity());
}

#if defined(__SANITIZE_ADDRESS__)
TEST(BufferCacheDeathTest, AHeldBufferIsPoisonedForAddressSanitizer) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // other tests' engines left worker threads
  BufferCache cache(kMiB);
  auto* p = static_cast<char*>(cache.allocate(256));
  cache.deallocate(p, 256);
  EXPECT_DEATH(p[100] = 1, "use-after-poison");
}
#endif

TEST(BufferCache, ATensorsBufferServesTheNextTensorOfItsSize) {
  Engine engine;
  const void* freed = nullptr;
  {
    Tensor t = Tensor::zeros(engine, {1000}, DType::float32);
    freed = t.data();
  }
  engine.wait_all();  // its deletion ran
  Tensor u = Tensor::full(engine, {1000}, 2.0, DType::float32);
  EXPECT_EQ(u.data(), freed) << "the most recently freed buffer of the class";
  // A reused buffer holds what its new tensor was given.
  EXPECT_EQ(u.to_host<float>(), std::vector<float>(1000, 2.0f));
}

}  // namespace
}  // namespace depengine::ops::detail
