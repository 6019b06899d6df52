#include "engine/op_pool.h"

namespace depengine::detail {

OpPool::Stock& OpPool::stock() {
  static Stock* s = new Stock;
  return *s;
}

OpPool::ThreadCache::~ThreadCache() {
  if (local.size > 0) give_batch(local);
}

OpPool::ThreadCache& OpPool::cache() {
  thread_local ThreadCache c;
  return c;
}

OpPool::Batch OpPool::take_batch() {
  Stock& s = stock();
  std::lock_guard lock(s.mutex);
  if (s.batches.empty()) return {};
  Batch b = s.batches.back();
  s.batches.pop_back();
  return b;
}

void OpPool::give_batch(Batch batch) {
  Stock& s = stock();
  std::lock_guard lock(s.mutex);
  s.batches.push_back(batch);
}

OpBlock* OpPool::acquire() {
  Batch& local = cache().local;
  if (local.head == nullptr) local = take_batch();
  if (local.head == nullptr) return new OpBlock;
  OpBlock* op = local.head;
  local.head = op->pool_next;
  --local.size;
  return op;
}

void OpPool::release(OpBlock* op) {
  op->clear_for_reuse();
  Batch& local = cache().local;
  if (local.size == kBatch) {
    give_batch(local);
    local = {};
  }
  op->pool_next = local.head;
  local.head = op;
  ++local.size;
}

}  // namespace depengine::detail
