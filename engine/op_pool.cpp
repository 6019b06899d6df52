#include "engine/op_pool.h"

#include <algorithm>

namespace depengine::detail {

OpPool::Stock& OpPool::stock() {
  static Stock* s = new Stock;
  return *s;
}

OpPool::ThreadCache::~ThreadCache() {
  if (!blocks.empty()) give_batch(blocks, 0);
  t_cache = nullptr;
  t_cache_destroyed = true;
}

OpPool::ThreadCache* OpPool::make_cache() {
  if (t_cache_destroyed) return nullptr;
  // Owns the cache and returns its blocks when the thread ends.
  thread_local ThreadCache c;
  t_cache = &c;
  return &c;
}

void OpPool::take_batch(std::vector<OpBlock*>& to) {
  Stock& s = stock();
  std::lock_guard lock(s.mutex);
  const std::size_t n = std::min(kBatch, s.blocks.size());
  to.insert(to.end(), s.blocks.end() - static_cast<std::ptrdiff_t>(n), s.blocks.end());
  s.blocks.resize(s.blocks.size() - n);
}

void OpPool::give_batch(std::vector<OpBlock*>& blocks, std::size_t from) {
  Stock& s = stock();
  {
    std::lock_guard lock(s.mutex);
    s.blocks.insert(s.blocks.end(), blocks.begin() + static_cast<std::ptrdiff_t>(from), blocks.end());
  }
  blocks.resize(from);
}

OpBlock* OpPool::acquire() {
  ThreadCache* c = cache();
  if (c == nullptr) [[unlikely]] return acquire_uncached();
  std::vector<OpBlock*>& blocks = c->blocks;
  if (blocks.empty()) take_batch(blocks);
  if (blocks.empty()) return new OpBlock;
  OpBlock* op = blocks.back();
  blocks.pop_back();
  // Two stages: the entries' address is read from a block prefetched
  // earlier, which has arrived by now.
  const std::size_t n = blocks.size();
  if (n >= kPrefetchDistance) prefetch_block(blocks[n - kPrefetchDistance]);
  if (n >= kPrefetchDistance / 2) prefetch_entry_storage(blocks[n - kPrefetchDistance / 2]);
  return op;
}

void OpPool::release(OpBlock* op) {
  op->clear_for_reuse();
  ThreadCache* c = cache();
  if (c == nullptr) [[unlikely]] return release_uncached(op);
  std::vector<OpBlock*>& blocks = c->blocks;
  if (blocks.size() == 2 * kBatch) give_batch(blocks, kBatch);
  blocks.push_back(op);
}

OpBlock* OpPool::acquire_uncached() {
  Stock& s = stock();
  std::lock_guard lock(s.mutex);
  if (s.blocks.empty()) return new OpBlock;
  OpBlock* op = s.blocks.back();
  s.blocks.pop_back();
  return op;
}

void OpPool::release_uncached(OpBlock* op) {
  Stock& s = stock();
  std::lock_guard lock(s.mutex);
  s.blocks.push_back(op);
}

}  // namespace depengine::detail
