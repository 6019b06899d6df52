#pragma once
// ThreadBuffer: what one thread recorded for one recorder. Only its thread
// appends to it, so its lock is uncontended except while a reader copies it;
// the recorder merges all buffers when the recording is read.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "depengine/device.h"
#include "depengine/options.h"

namespace depengine::detail {

/// What a thread did, which names its track.
struct ThreadRole {
  bool frontend = false;  // pushed from outside an operation, or blocked
  bool ran_ops = false;
};

struct RawBlock {
  std::string what;
  int thread = -1;
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
};

/// An operation's description, appended by the thread that pushed it (or, for
/// an op pushed before the recording began, by the thread that started it).
/// Its variables are `vars[first_var, first_var + var_count)` of the buffer:
/// one shared vector instead of four per op keeps allocation off the hooks.
struct PushEvent {
  std::uint64_t op = 0;  // the recorder's internal id, not the reported one
  std::int64_t ns = -1;  // -1: pushed before the recording began
  std::string name;
  Device device;
  OpProperty property = OpProperty::Normal;
  bool async = false;
  std::uint32_t first_var = 0;
  std::uint32_t var_count = 0;
};

struct VarRef {
  std::string label;
  std::uint64_t id = 0;
  bool write = false;
};

struct StartEvent {
  std::uint64_t op = 0;
  std::int64_t ns = 0;
  int stream_index = -1;
};

/// An operation's end (its function returned) or completion.
struct StampEvent {
  std::uint64_t op = 0;
  std::int64_t ns = 0;
};

struct ReleaseEvent {
  std::uint64_t by = 0;
  std::uint64_t released = 0;
};

struct ThreadBuffer {
  explicit ThreadBuffer(int thread_number) : thread(thread_number) {}

  const int thread;  // thread_number() of its thread: the key of its track
  std::mutex mutex;  // guards everything below
  ThreadRole role;
  // Internal op ids are taken from the recorder in chunks, so that a push
  // touches no line shared with other threads.
  std::uint64_t next_op = 0;
  std::uint64_t chunk_end = 0;
  std::vector<PushEvent> pushes;
  std::vector<VarRef> vars;
  std::vector<StartEvent> starts;
  std::vector<StampEvent> ends;
  std::vector<StampEvent> completions;
  std::vector<ReleaseEvent> releases;
  std::vector<RawBlock> blocks;
  // Blocking calls begun and not yet ended (they nest at most once, but a
  // stack costs nothing).
  std::vector<RawBlock> open_blocks;
};

}  // namespace depengine::detail
