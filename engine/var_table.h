#pragma once
// VarTable: the engine's variables, addressed by slot. Slots are recycled
// after deletion with a new generation, so a stale Var handle is detected.
// Lookup is lock-free (chunks never move); creation and recycling lock.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "depengine/var.h"
#include "engine/var_state.h"

namespace depengine::detail {

class VarTable {
 public:
  explicit VarTable(std::uint32_t engine_id) : engine_id_(engine_id) {}
  ~VarTable();

  Var create(std::string_view name);
  /// The live state behind `var`, or null if the handle is null, foreign,
  /// stale, or its variable's deletion was already pushed.
  VarState* find(Var var) const {
    VarState* state = find_including_deleted(var);
    if (state == nullptr || state->delete_pushed.load(std::memory_order_acquire)) return nullptr;
    return state;
  }
  /// Like find, but also accepts variables whose deletion was pushed.
  VarState* find_including_deleted(Var var) const {
    if (var.engine_id() != engine_id_) return nullptr;
    VarState* state = slot_state(var.slot());
    if (state == nullptr) return nullptr;
    const std::uint32_t generation = var.generation();
    if ((generation & 1) == 0 || state->generation.load(std::memory_order_acquire) != generation) return nullptr;
    return state;
  }
  /// Whether `state` is still the live variable of generation `generation`
  /// whose deletion was not pushed. Pushes check it again where they are
  /// ordered (under the variable's lock, or their buffer's with its claim):
  /// find() alone races with a delete_var that registers in between.
  static bool is_current(const VarState& state, std::uint32_t generation) {
    // Acquire: create() resets delete_pushed only after a new generation.
    return !state.delete_pushed.load(std::memory_order_seq_cst) &&
           state.generation.load(std::memory_order_acquire) == generation;
  }
  /// The variable in `slot` (its deletion may have been pushed), or a null
  /// Var when the slot is free or was never used.
  Var live_var(std::uint32_t slot) const;
  /// Frees the slot for reuse; old handles become stale.
  void recycle(VarState* var);

  std::uint32_t engine_id() const { return engine_id_; }

 private:
  static constexpr std::uint32_t kChunkBits = 10;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr std::uint32_t kMaxChunks = 1u << 14;  // 16 M variables

  using Chunk = std::array<VarState, kChunkSize>;

  /// The state of `slot` if its chunk exists (live, free or never used), else null.
  VarState* slot_state(std::uint32_t slot) const {
    if (slot >= kMaxChunks * kChunkSize) return nullptr;
    Chunk* chunk = chunks_[slot >> kChunkBits].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : &(*chunk)[slot & (kChunkSize - 1)];
  }

  std::uint32_t engine_id_;
  std::array<std::atomic<Chunk*>, kMaxChunks> chunks_{};
  std::mutex mutex_;
  std::uint32_t next_slot_ = 0;  // guarded by mutex_
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace depengine::detail
