#pragma once
// ProfileRecorder: the engine observer behind Profiler. Each hook appends a
// timestamped event to its own thread's buffer (registered with the recorder
// the first time the thread records), so threads recording at once share no
// lock; reading the recording merges the buffers. With no observer installed,
// each hook is one predictable branch in the engine. Turning the raw records
// into tracks and slices is Timeline's job.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/tbb/concurrent_unordered_map.h>
#include <oneapi/tbb/tbb_allocator.h>

#include "depengine/device.h"
#include "depengine/options.h"
#include "engine/op_observer.h"
#include "profiler/thread_buffer.h"

namespace depengine::detail {

/// One operation as recorded: nanoseconds from the recorder's origin, -1 for
/// events that did not happen (or happened while not recording).
struct RawOp {
  std::uint64_t id = 0;  // 1, 2, ... in push order
  std::string name;
  Device device;
  OpProperty property = OpProperty::Normal;
  bool async = false;
  std::vector<std::string> reads;
  std::vector<std::string> writes;
  std::vector<std::uint64_t> read_ids;
  std::vector<std::uint64_t> write_ids;
  std::int64_t push_ns = -1;
  std::int64_t start_ns = -1;
  std::int64_t end_ns = -1;
  std::int64_t complete_ns = -1;
  int push_thread = -1;  // thread numbers: see thread_number()
  int run_thread = -1;
  int stream_index = -1;
  std::uint64_t released_by = 0;
};

/// A consistent copy of everything recorded.
struct RawRecording {
  std::vector<RawOp> ops;
  std::vector<RawBlock> blocks;
  std::unordered_map<int, ThreadRole> threads;
  std::int64_t wall_ns = 0;
};

// Blocks are cache-line aligned: an identity hash would leave the low bits,
// which pick the bucket, all zero.
struct BlockAddressHash {
  std::size_t operator()(const OpBlock* op) const {
    const std::uint64_t h = reinterpret_cast<std::uintptr_t>(op) * 0x9e3779b97f4a7c15ull;
    return static_cast<std::size_t>(h ^ (h >> 32));
  }
};

class ProfileRecorder final : public OpObserver {
 public:
  ProfileRecorder();

  void start();
  void stop();
  bool recording() const;
  void clear();
  RawRecording snapshot() const;

  void on_push(const OpBlock& op) override;
  void on_start(const OpBlock& op, const RunContext& ctx) override;
  void on_end(const OpBlock& op, const RunContext& ctx) override;
  void on_complete(const OpBlock& op) override;
  void on_release(const OpBlock& by, const OpBlock& released) override;
  void on_block_begin(const char* what) override;
  void on_block_end(const char* what) override;

 private:
  // The calling thread's buffer, registered on its first event.
  ThreadBuffer& buffer();
  std::uint64_t new_op_id(ThreadBuffer& buffer);
  // Appends the op's description; `buffer` locked.
  void describe(ThreadBuffer& buffer, std::uint64_t id, const OpBlock& op, std::int64_t push_ns);
  std::int64_t now_ns() const;
  // Which recorded op a (pooled, reused) block currently is: see the .cpp.
  std::atomic<std::uint64_t>& slot(const OpBlock& op);
  // The op id in a slot's value, or 0 when it is stale or empty.
  std::uint64_t live_id(std::uint64_t slot_value) const;

  const std::chrono::steady_clock::time_point origin_;
  // Told apart from every other recorder of the process, so that a thread's
  // cached buffer is never taken for the buffer of a recorder that reuses a
  // destroyed one's address.
  const std::uint64_t serial_;
  std::atomic<bool> recording_{false};
  // Ids below it are from before the last clear().
  std::atomic<std::uint64_t> first_live_id_{1};
  std::atomic<std::uint64_t> next_id_chunk_{1};
  using SlotEntry = std::pair<const OpBlock* const, std::atomic<std::uint64_t>>;
#if DEPENGINE_TSAN
  // oneTBB's own allocator (tbbmalloc) is not built with ThreadSanitizer,
  // which then takes its reuse of memory for races.
  using SlotAllocator = std::allocator<SlotEntry>;
#else
  using SlotAllocator = tbb::tbb_allocator<SlotEntry>;
#endif
  tbb::concurrent_unordered_map<const OpBlock*, std::atomic<std::uint64_t>, BlockAddressHash,
                                std::equal_to<const OpBlock*>, SlotAllocator>
      slots_;

  // Guards what follows. A hook takes it only on its thread's first event
  // here, or when its thread last recorded into another recorder.
  mutable std::mutex mutex_;
  std::int64_t session_begin_ns_ = 0;
  std::int64_t wall_ns_ = 0;
  // By thread number. A buffer outlives its thread: what an exited thread
  // recorded stays.
  std::map<int, std::unique_ptr<ThreadBuffer>> buffers_;
};

}  // namespace depengine::detail
