#pragma once
// OpPool: recycles OpBlocks so that pushing an operation allocates nothing
// once the pool is warm. Each thread keeps a private cache; caches exchange
// batches with a shared stock under a mutex, so the mutex is taken once per
// kBatch operations, not once per operation.

#include <cstddef>
#include <mutex>
#include <vector>

#include "engine/op_block.h"

namespace depengine::detail {

class OpPool {
 public:
  static OpBlock* acquire();
  static void release(OpBlock* op);

 private:
  static constexpr std::size_t kBatch = 64;
  // Blocks usually come back from the thread that ran them, on another core:
  // acquire starts loading the block it will hand out this many calls later.
  static constexpr std::size_t kPrefetchDistance = 4;

  struct ThreadCache {
    ThreadCache() { blocks.reserve(2 * kBatch); }
    ~ThreadCache();
    std::vector<OpBlock*> blocks;  // a stack: the last released goes first
  };

  // The hot path reads a plain pointer: a thread_local object with a
  // destructor costs a guard check and a call on every access.
  static ThreadCache* cache() {
    ThreadCache* c = t_cache;
    return c != nullptr ? c : make_cache();
  }
  /// Null once the thread's cache was destroyed at its exit: a later
  /// thread-local destructor may still push (or run an op, naive).
  static ThreadCache* make_cache();
  /// For a thread without its cache: one block from the stock, or back.
  static OpBlock* acquire_uncached();
  static void release_uncached(OpBlock* op);
  static inline thread_local ThreadCache* t_cache = nullptr;
  static inline thread_local bool t_cache_destroyed = false;
  /// Moves up to kBatch blocks from the stock into `to`.
  static void take_batch(std::vector<OpBlock*>& to);
  /// Moves blocks [from, end) of `blocks` to the stock.
  static void give_batch(std::vector<OpBlock*>& blocks, std::size_t from);

  struct Stock {
    std::mutex mutex;
    std::vector<OpBlock*> blocks;
  };
  // Never destroyed: threads may return their caches during process exit.
  static Stock& stock();
};

}  // namespace depengine::detail
