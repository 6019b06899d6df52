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

VarState* VarTable::find_including_deleted(Var var) const {
  if (var.engine_id() != engine_id_) return nullptr;
  const std::uint32_t slot = var.slot();
  if (slot >= kMaxChunks * kChunkSize) return nullptr;
  Chunk* chunk = chunks_[slot >> kChunkBits].load(std::memory_order_acquire);
  if (chunk == nullptr) return nullptr;
  VarState& state = (*chunk)[slot & (kChunkSize - 1)];
  if (state.generation.load(std::memory_order_acquire) != var.generation()) return nullptr;
  return &state;
}

VarState* VarTable::find(Var var) const {
  VarState* state = find_including_deleted(var);
  if (state == nullptr || state->delete_pushed.load(std::memory_order_acquire)) return nullptr;
  return state;
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
