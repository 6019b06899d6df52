#include "engine/var_table.h"

#include <stdexcept>
#include <string>

namespace depengine::detail {

VarTable::~VarTable() {
  for (auto& chunk : chunks_) delete chunk.load(std::memory_order_relaxed);
}

Var VarTable::create(std::string_view name) {
  std::lock_guard lock(mutex_);
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    if (next_slot_ == kMaxChunks * kChunkSize) {
      throw std::length_error("depengine: too many live variables (" +
                              std::to_string(next_slot_) + ")");
    }
    slot = next_slot_++;
    auto& chunk = chunks_[slot >> kChunkBits];
    if (chunk.load(std::memory_order_relaxed) == nullptr) {
      chunk.store(new Chunk, std::memory_order_release);
    }
  }
  VarState& state = (*chunks_[slot >> kChunkBits].load(std::memory_order_relaxed))[slot & (kChunkSize - 1)];
  state.slot = slot;
  state.name.assign(name);
  state.delete_pushed.store(false, std::memory_order_relaxed);
  return Var(engine_id_, slot, state.generation.load(std::memory_order_relaxed));
}

void VarTable::recycle(VarState* var) {
  std::lock_guard lock(mutex_);
  var->generation.fetch_add(1, std::memory_order_release);
  var->name.clear();
  {
    std::lock_guard var_lock(var->lock);
    var->failed.store(false, std::memory_order_relaxed);
    var->error = nullptr;
  }
  free_slots_.push_back(var->slot);
}

}  // namespace depengine::detail
