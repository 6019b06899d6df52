#pragma once
// OpPool: recycles OpBlocks so that pushing an operation allocates nothing
// once the pool is warm. Each thread keeps a private cache; caches exchange
// whole batches with a shared stock under a mutex, so the mutex is taken once
// per kBatch operations, not once per operation.

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

  struct Batch {
    OpBlock* head = nullptr;
    std::size_t size = 0;
  };

  struct ThreadCache {
    Batch local;
    ~ThreadCache();
  };

  static ThreadCache& cache();
  static Batch take_batch();
  static void give_batch(Batch batch);

  struct Stock {
    std::mutex mutex;
    std::vector<Batch> batches;
  };
  // Never destroyed: threads may return their caches during process exit.
  static Stock& stock();
};

}  // namespace depengine::detail
