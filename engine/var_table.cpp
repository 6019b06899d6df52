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
  std::uint32_t generation;
  {
    std::lock_guard var_lock(state.lock);
    generation = state.generation.load(std::memory_order_relaxed) + 1;  // odd: live
    state.generation.store(generation, std::memory_order_release);
  }
  // Release: a push that sees the reset also sees the new generation.
  state.delete_pushed.store(false, std::memory_order_release);
  return Var(engine_id_, slot, generation);
}

Var VarTable::live_var(std::uint32_t slot) const {
  const VarState* state = slot_state(slot);
  if (state == nullptr) return {};
  const std::uint32_t generation = state->generation.load(std::memory_order_acquire);
  if ((generation & 1) == 0) return {};
  return Var(engine_id_, slot, generation);
}

void VarTable::recycle(VarState* var) {
  std::lock_guard lock(mutex_);
  var->name.clear();
  {
    std::lock_guard var_lock(var->lock);
    var->generation.fetch_add(1, std::memory_order_release);  // even: free
    var->failed.store(false, std::memory_order_relaxed);
    var->error = nullptr;
  }
  free_slots_.push_back(var->slot);
}

}  // namespace depengine::detail
