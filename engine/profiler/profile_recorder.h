#pragma once
// ProfileRecorder: the engine observer behind Profiler. It records raw
// timestamps per operation, per blocking call and per thread, under one lock
// (profiling is off the engine's fast path: with no observer installed, each
// hook is one predictable branch in the engine). Turning the raw records
// into tracks and slices is Timeline's job.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "depengine/device.h"
#include "depengine/options.h"
#include "engine/op_observer.h"

namespace depengine::detail {

/// One operation as recorded: nanoseconds from the recorder's origin, -1 for
/// events that did not happen (or happened while not recording).
struct RawOp {
  std::uint64_t id = 0;
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

struct RawBlock {
  std::string what;
  int thread = -1;
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
};

/// What a thread did, which names its track.
struct ThreadRole {
  bool frontend = false;  // pushed from outside an operation, or blocked
  bool ran_ops = false;
};

/// A consistent copy of everything recorded.
struct RawRecording {
  std::vector<RawOp> ops;
  std::vector<RawBlock> blocks;
  std::unordered_map<int, ThreadRole> threads;
  std::int64_t wall_ns = 0;
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
  std::int64_t now_ns() const;
  // With mutex_ held.
  RawOp& new_op(const OpBlock& op);
  RawOp* live(const OpBlock& op);
  void retire_if_done(const OpBlock& op, const RawOp& raw);

  const std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mutex_;
  bool recording_ = false;
  std::int64_t session_begin_ns_ = 0;
  std::int64_t wall_ns_ = 0;
  std::uint64_t next_id_ = 1;
  std::vector<RawOp> ops_;
  // Operations pushed or started while recording and not yet finished, by
  // block (blocks are pooled: the map forgets one when its op is done).
  std::unordered_map<const OpBlock*, std::size_t> live_;
  std::vector<RawBlock> blocks_;
  // Blocking calls begun and not yet ended, per thread (they nest at most
  // once, but a stack costs nothing).
  std::unordered_map<int, std::vector<RawBlock>> open_blocks_;
  std::unordered_map<int, ThreadRole> threads_;
};

}  // namespace depengine::detail
