#pragma once
// OpBlock: one pushed operation as the engine tracks it, and its Entry in the
// version queue of each variable it touches. Blocks are pooled (OpPool) and
// reused, so containers inside keep their capacity from one use to the next.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "depengine/engine.h"
#include "depengine/executor.h"
#include "sync/prefetch.h"

namespace depengine {
class EngineCore;
}

namespace depengine::detail {

struct GraphData;
struct OpBlock;
class VarAdoption;
struct VarState;
class WaitSignal;

/// One operation's place in one variable's version queue: one line each, as
/// the frontend writes it and a worker reads and clears it on another core.
struct alignas(64) Entry {
  VarState* var = nullptr;
  OpBlock* op = nullptr;
  Entry* prev = nullptr;
  // Written only through set_next (under the variable's lock), so that
  // peek_next may read it without the lock.
  Entry* next = nullptr;
  bool write = false;
  bool launched = false;
  /// Where the variable stands in the op's lists (reads, then writes): of
  /// several failed inputs, the first listed one gives the op its error, so
  /// that the choice depends neither on addresses nor on timing.
  std::uint32_t position = 0;
  /// The variable's generation when the push looked it up (VarTable::is_current).
  std::uint32_t generation = 0;
  /// The variable's error as this entry sees it at its turn in push order
  /// (guarded by the variable's lock): taken when the entry is granted, and
  /// overwritten when an earlier write it was granted behind fails. Frozen
  /// here, it survives a blocking call that reports and clears the variable's
  /// error before an early-granted op gets to check it.
  std::exception_ptr error;
  // The successor's op, kept with `next` so that a worker can prefetch it
  // from this line, an op ahead, without touching the successor's line.
  OpBlock* next_op = nullptr;

  /// Fills in which op this entry is and for which variable, as the op is made.
  void place(VarState* in_var, OpBlock* of_op, bool writes, std::uint32_t at_position,
             std::uint32_t looked_up_generation) {
    var = in_var;
    op = of_op;
    write = writes;
    position = at_position;
    generation = looked_up_generation;
  }

  // Release / acquire: a worker that peeks at the successor may read its
  // links (see prefetch_successors), written by the thread that made it.
  void set_next(Entry* entry) {
    std::atomic_ref<OpBlock*>(next_op).store(entry ? entry->op : nullptr, std::memory_order_relaxed);
    std::atomic_ref<Entry*>(next).store(entry, std::memory_order_release);
  }
  /// The successor and its op, read without the variable's lock: hints for
  /// prefetching only, which may be stale by the time the lock is taken.
  Entry* peek_next() { return std::atomic_ref<Entry*>(next).load(std::memory_order_acquire); }
  OpBlock* peek_next_op() { return std::atomic_ref<OpBlock*>(next_op).load(std::memory_order_relaxed); }
};

static_assert(sizeof(Entry) == 64, "Entry: one line");

enum class OpKind : std::uint8_t {
  Sync,        // push
  Async,       // push_async
  Wait,        // the engine's own marker behind wait_to_read / wait_to_write
  Delete,      // delete_var
};

inline constexpr std::uint32_t kAsyncInvoking = 1;
inline constexpr std::uint32_t kAsyncDropped = 2;

struct alignas(64) OpBlock {
  // Hot: what every push, dispatch and completion touches, packed into two
  // lines (the block changes cores between the frontend and a worker, so
  // every line touched costs a cache miss): the bookkeeping, then the
  // function, whose inline storage ends in the third line.
  EngineCore* engine = nullptr;
  Executor* executor = nullptr;
  // Entries not yet granted, plus one for the push itself. The pushing
  // thread settles the grants it made itself in one step (see
  // ThreadedEngine::submit); later grants count down one by one.
  std::atomic<int> pending{0};
  OpKind kind = OpKind::Sync;
  OpProperty property = OpProperty::Normal;
  bool device_uses_fences = false;
  bool named = false;  // `name` is set
  int priority = 0;
  Device device;
  // Set (after an Entry::error) once some entry of the op has an input error.
  std::atomic<bool> input_failed{false};
  bool has_error = false;  // `error` is set (read without touching its line)
  bool drops_failure = false;  // a Delete of a helper variable (Engine::delete_helper_var)
  // A graph replay: not skipped when an input failed, since its nodes that
  // do not touch the failed variable still run (GraphRun).
  bool runs_graph = false;
  // PushOptions::bytes, saturated; every push sets it.
  std::uint32_t bytes = 0;
  // Entries, sorted by variable address (the lock order).
  std::vector<Entry> entries;
  OpFn fn;
  std::exception_ptr error;  // why the operation failed or was skipped
  // Beside the end of the function's storage, which a closure of more than
  // 32 bytes (a tensor op's) fills: a worker reads the name for the op's
  // RunContext, and then without another line.
  std::string name;

  // Cold: other kinds of operation, stream devices, profiling.
  AsyncOpFn async_fn;
  // On stream devices, the fences each entry must wait for when granted
  // before its predecessors completed (by index in `entries`; each filled
  // under its variable's lock), and their union once the op is ready.
  std::vector<std::vector<Fence>> entry_fences;
  std::vector<Fence> fences;
  ReleaseFn release;
  WaitSignal* signal = nullptr;
  Fence launch_fence;  // set by ReadyOp::launched
  GraphData* stream_graph = nullptr;  // a replay on one stream device (ReadyOp::stream_graph)
  VarAdoption* adoption = nullptr;    // a replay whose graph adopts variables (engine/var_adoption.h)
  // Completion ticket: odd while a Completion may complete the op, so that a
  // second call (or a call on a recycled block) is detected.
  std::atomic<std::uint64_t> ticket{0};
  // kAsyncInvoking while the async function runs, kAsyncDropped once its
  // Completion was destroyed uncalled.
  std::atomic<std::uint32_t> async_state{0};
  // Async ops are held by invoke() and by their completion; the block goes
  // back to the pool when both let go (a Completion may fire inside invoke).
  std::atomic<int> holds{0};
  std::uint64_t sequence = 0;  // push order, for the profiler and FIFO ties

  /// Whether the op was granted ahead of predecessors that had only been
  /// launched (read without touching the cold lines for CPU ops).
  bool has_fences() const { return device_uses_fences && !fences.empty(); }
  std::vector<Fence>& fences_of(const Entry& entry) {
    return entry_fences[static_cast<std::size_t>(&entry - entries.data())];
  }

  void set_error(std::exception_ptr e) {
    error = std::move(e);
    has_error = true;
  }

  /// The op's name, without touching its line when it has none.
  std::string_view name_view() const { return named ? std::string_view(name) : std::string_view(); }

  void clear_for_reuse() {
    fn.reset();
    entries.clear();
    executor = nullptr;
    input_failed.store(false, std::memory_order_relaxed);
    named = false;
    // Only what this use set, as the hot fields tell: each cold line touched
    // here is one the frontend wrote or that no cache holds. A plain CPU op
    // (the tensor ops' every op) sets none but its name, which stays, hidden
    // by `named`, until a named push overwrites it.
    switch (kind) {
      case OpKind::Sync:
        break;
      case OpKind::Async:
        async_fn.reset();
        break;
      case OpKind::Wait:
        signal = nullptr;
        break;
      case OpKind::Delete:
        release.reset();
        drops_failure = false;
        break;
    }
    if (has_error) {
      error = nullptr;
      has_error = false;
    }
    if (device_uses_fences) {
      for (std::vector<Fence>& f : entry_fences) f.clear();
      fences.clear();
      device_uses_fences = false;
    }
    if (!device.is_cpu()) launch_fence = Fence{};  // ReadyOp::launched: stream devices only
    if (runs_graph) {
      stream_graph = nullptr;
      adoption = nullptr;
      runs_graph = false;
    }
  }
};

#if defined(__x86_64__) && defined(__GLIBCXX__)
// clear_for_reuse resets, field by field, what a use set, and skips the
// cold fields a use did not set: a field added to OpBlock must be reset there
// too. This fails to remind whoever adds one (update the size with it).
static_assert(sizeof(OpBlock) == 448, "OpBlock changed: reset the new field in clear_for_reuse");
#endif

/// Starts loading the lines a thread touches to run or reuse `op`, so that
/// the cache misses of several blocks that come from another core overlap
/// instead of stalling one after another.
inline void prefetch_block(const OpBlock* op) {
  // The two hot lines (bookkeeping, function). The third, where a large
  // closure and the name end, is left to the call: an empty op's block
  // would trade it between the cores for nothing.
  const char* line = reinterpret_cast<const char*>(op);
  prefetch_for_write(line);
  prefetch_for_write(line + 64);
}

// Prefetching the first few entries (or their variables) suffices to hide
// the latency of the rest.
inline constexpr std::size_t kPrefetchedEntries = 4;

/// The same for the op's first entries (its block must be loaded, or on
/// its way).
inline void prefetch_entries(const OpBlock* op) {
  const std::size_t n = std::min(op->entries.size(), kPrefetchedEntries);
  for (std::size_t i = 0; i < n; ++i) prefetch_for_write(&op->entries[i]);
}

/// The same for the variables of the op's first entries (the entries must
/// be loaded, or on their way).
inline void prefetch_vars(const OpBlock* op) {
  const std::size_t n = std::min(op->entries.size(), kPrefetchedEntries);
  for (std::size_t i = 0; i < n; ++i) prefetch_for_write(op->entries[i].var);
}

/// For an op about to run: the entries queued behind its first entries, and
/// their ops, which its completion grants and the worker may run next; and,
/// behind a write, those one further: a miss on another core's line outlasts
/// a short op, so on a chain the lines are asked for two ops before they are
/// needed (the successor's line, asked for an op ago, has arrived by now).
/// Only behind a write is the successor's line read: nothing behind a write
/// completes before it, whereas a read's successor may be another read that
/// completed meanwhile and whose block was reused.
inline void prefetch_successors(OpBlock* op) {
  const std::size_t n = std::min(op->entries.size(), kPrefetchedEntries);
  for (std::size_t i = 0; i < n; ++i) {
    Entry& e = op->entries[i];
    Entry* next = e.peek_next();
    if (next == nullptr) continue;
    prefetch_for_write(next);
    if (OpBlock* next_op = e.peek_next_op()) prefetch_block(next_op);
    if (!e.write) continue;
    if (Entry* after = next->peek_next()) prefetch_for_write(after);
    if (OpBlock* after_op = next->peek_next_op()) prefetch_block(after_op);
  }
}

/// For a block about to be reused: its entries' storage, which the thread
/// that ran it wrote last.
inline void prefetch_entry_storage(const OpBlock* op) {
  if (op->entries.capacity() != 0) prefetch_for_write(op->entries.data());
}

/// Gives `entry` the error `error` of its variable as input (the variable's
/// lock held).
inline void set_input_error(Entry& entry, std::exception_ptr error) {
  entry.error = std::move(error);
  entry.op->input_failed.store(true, std::memory_order_release);
}

/// The error of an async operation whose Completion was dropped uncalled.
std::exception_ptr dropped_completion_error(const OpBlock& op);

}  // namespace depengine::detail
