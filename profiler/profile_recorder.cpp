#include "profiler/profile_recorder.h"

#include <algorithm>
#include <tuple>

#include "engine/engine_core.h"
#include "engine/var_state.h"

namespace depengine::detail {
namespace {

// A small process-wide number per thread, stable for the thread's life:
// the tracks of a trace are keyed by it.
int thread_number() {
  static std::atomic<int> next{0};
  thread_local const int number = next.fetch_add(1, std::memory_order_relaxed);
  return number;
}

std::string var_label(const VarState& var) {
  // append, not "#" + ...: GCC 12 warns wrongly (-Wrestrict) on the latter.
  return var.name.empty() ? std::string("#").append(std::to_string(var.slot)) : var.name;
}

// Slot and generation: a reused slot has a new generation.
std::uint64_t var_id(const VarState& var) {
  return std::uint64_t{var.slot} << 32 | var.generation.load(std::memory_order_relaxed);
}

bool is_operation(const OpBlock& op) { return op.kind == OpKind::Sync || op.kind == OpKind::Async; }

// A block's slot holds the internal id of the op the block currently is, and
// which of its events were seen. The engine orders every event of one op
// after its push, and the block's next push after all of them (blocks go back
// to the pool last), so the slot needs no lock. The op is retired (slot 0)
// by the last of on_end and on_complete: an async op may complete before its
// function returns.
constexpr std::uint64_t kStarted = std::uint64_t{1} << 63;
constexpr std::uint64_t kEnded = std::uint64_t{1} << 62;
constexpr std::uint64_t kCompleted = std::uint64_t{1} << 61;
constexpr std::uint64_t kIdMask = kCompleted - 1;

// Ids a thread takes at once: it touches the shared counter once per chunk.
constexpr std::uint64_t kIdChunk = 1024;

std::atomic<std::uint64_t> next_serial{1};

}  // namespace

ProfileRecorder::ProfileRecorder()
    : origin_(std::chrono::steady_clock::now()), serial_(next_serial.fetch_add(1, std::memory_order_relaxed)) {
  // Each hook looks its block up: short bucket chains (the default lets them
  // grow to 4 nodes) save cache misses there.
  slots_.max_load_factor(0.5f);
}

std::int64_t ProfileRecorder::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin_).count();
}

void ProfileRecorder::start() {
  const std::int64_t now = now_ns();
  std::lock_guard lock(mutex_);
  if (recording_.load(std::memory_order_relaxed)) return;
  session_begin_ns_ = now;
  recording_.store(true, std::memory_order_release);
}

void ProfileRecorder::stop() {
  const std::int64_t now = now_ns();
  std::lock_guard lock(mutex_);
  if (!recording_.load(std::memory_order_relaxed)) return;
  recording_.store(false, std::memory_order_release);
  wall_ns_ += now - session_begin_ns_;
}

bool ProfileRecorder::recording() const { return recording_.load(std::memory_order_acquire); }

void ProfileRecorder::clear() {
  const std::int64_t now = now_ns();
  std::lock_guard lock(mutex_);
  // The floor first: a chunk a thread takes after it lies above, and its
  // older chunk is dropped below.
  first_live_id_.store(next_id_chunk_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  for (const auto& [thread, b] : buffers_) {
    std::lock_guard buffer_lock(b->mutex);
    ThreadBuffer fresh(b->thread);
    std::swap(b->role, fresh.role);
    b->next_op = b->chunk_end = 0;
    // swap, not clear(): give the memory back.
    b->pushes.swap(fresh.pushes);
    b->vars.swap(fresh.vars);
    b->starts.swap(fresh.starts);
    b->ends.swap(fresh.ends);
    b->completions.swap(fresh.completions);
    b->releases.swap(fresh.releases);
    b->blocks.swap(fresh.blocks);
    b->open_blocks.swap(fresh.open_blocks);
  }
  wall_ns_ = 0;
  session_begin_ns_ = now;
}

ThreadBuffer& ProfileRecorder::buffer() {
  // Trivially destructible, so still usable while the thread exits (the
  // destructor of a static engine may record on the main thread then). Raw:
  // recorder `serial` owns the buffer, and is alive when its serial matches.
  struct Cache {
    std::uint64_t serial;
    ThreadBuffer* buffer;
  };
  thread_local Cache cache{0, nullptr};
  if (cache.serial == serial_) [[likely]] return *cache.buffer;
  // The thread's first event here, or it last recorded into another recorder.
  const int thread = thread_number();
  std::lock_guard lock(mutex_);
  std::unique_ptr<ThreadBuffer>& mine = buffers_[thread];
  if (!mine) mine = std::make_unique<ThreadBuffer>(thread);
  cache = {serial_, mine.get()};
  return *mine;
}

std::uint64_t ProfileRecorder::new_op_id(ThreadBuffer& b) {
  if (b.next_op == b.chunk_end) {
    b.next_op = next_id_chunk_.fetch_add(kIdChunk, std::memory_order_relaxed);
    b.chunk_end = b.next_op + kIdChunk;
  }
  return b.next_op++;
}

void ProfileRecorder::describe(ThreadBuffer& b, std::uint64_t id, const OpBlock& op, std::int64_t push_ns) {
  PushEvent& p = b.pushes.emplace_back();
  p.op = id;
  p.ns = push_ns;
  p.name = op.name.empty() ? "(unnamed)" : op.name;
  p.device = op.device;
  p.property = op.property;
  p.async = op.kind == OpKind::Async;
  p.first_var = static_cast<std::uint32_t>(b.vars.size());
  p.var_count = static_cast<std::uint32_t>(op.entries.size());
  for (const Entry& e : op.entries) b.vars.push_back({var_label(*e.var), var_id(*e.var), e.write});
}

std::atomic<std::uint64_t>& ProfileRecorder::slot(const OpBlock& op) { return slots_[&op]; }

std::uint64_t ProfileRecorder::live_id(std::uint64_t slot_value) const {
  const std::uint64_t id = slot_value & kIdMask;
  return id >= first_live_id_.load(std::memory_order_relaxed) ? id : 0;
}

void ProfileRecorder::on_push(const OpBlock& op) {
  if (!recording_.load(std::memory_order_relaxed) || !is_operation(op)) return;
  const std::int64_t now = now_ns();
  const bool frontend = !EngineCore::in_operation();
  ThreadBuffer& b = buffer();
  std::uint64_t id;
  {
    std::lock_guard lock(b.mutex);
    id = new_op_id(b);
    describe(b, id, op, now);
    if (frontend) b.role.frontend = true;
  }
  slot(op).store(id, std::memory_order_release);
}

void ProfileRecorder::on_start(const OpBlock& op, const RunContext& ctx) {
  const std::int64_t now = now_ns();
  std::atomic<std::uint64_t>& s = slot(op);
  std::uint64_t id = live_id(s.load(std::memory_order_acquire));
  ThreadBuffer& b = buffer();
  {
    std::lock_guard lock(b.mutex);
    if (id == 0) {
      if (!recording_.load(std::memory_order_relaxed)) return;
      id = new_op_id(b);
      describe(b, id, op, -1);  // pushed before the recording started
    }
    b.starts.push_back({id, now, ctx.stream_index});
    // A stream's thread gets no track of its own: its ops go on the stream's.
    if (op.device.is_cpu() || ctx.stream_index < 0) b.role.ran_ops = true;
  }
  s.store(id | kStarted, std::memory_order_release);
}

void ProfileRecorder::on_end(const OpBlock& op, const RunContext&) {
  const std::int64_t now = now_ns();
  auto it = slots_.find(&op);
  if (it == slots_.end()) return;
  const std::uint64_t before = it->second.fetch_or(kEnded, std::memory_order_acq_rel);
  const std::uint64_t id = live_id(before);
  if (id == 0) return;
  if (before & kCompleted) it->second.store(0, std::memory_order_release);
  ThreadBuffer& b = buffer();
  std::lock_guard lock(b.mutex);
  b.ends.push_back({id, now});
}

void ProfileRecorder::on_complete(const OpBlock& op) {
  const std::int64_t now = now_ns();
  auto it = slots_.find(&op);
  if (it == slots_.end()) return;
  const std::uint64_t before = it->second.fetch_or(kCompleted, std::memory_order_acq_rel);
  const std::uint64_t id = live_id(before);
  if (id == 0) return;
  if (!(before & kStarted) || (before & kEnded)) it->second.store(0, std::memory_order_release);
  ThreadBuffer& b = buffer();
  std::lock_guard lock(b.mutex);
  b.completions.push_back({id, now});
}

void ProfileRecorder::on_release(const OpBlock& by, const OpBlock& released) {
  auto from = slots_.find(&by);
  auto to = slots_.find(&released);
  if (from == slots_.end() || to == slots_.end()) return;
  const std::uint64_t from_id = live_id(from->second.load(std::memory_order_acquire));
  const std::uint64_t to_id = live_id(to->second.load(std::memory_order_acquire));
  if (from_id == 0 || to_id == 0) return;
  ThreadBuffer& b = buffer();
  std::lock_guard lock(b.mutex);
  b.releases.push_back({from_id, to_id});
}

void ProfileRecorder::on_block_begin(const char* what) {
  if (!recording_.load(std::memory_order_relaxed)) return;
  const std::int64_t now = now_ns();
  ThreadBuffer& b = buffer();
  std::lock_guard lock(b.mutex);
  b.open_blocks.push_back({what, b.thread, now, now});
  b.role.frontend = true;
}

void ProfileRecorder::on_block_end(const char*) {
  const std::int64_t now = now_ns();
  ThreadBuffer& b = buffer();
  std::lock_guard lock(b.mutex);
  if (b.open_blocks.empty()) return;  // begun before the recording
  RawBlock block = std::move(b.open_blocks.back());
  b.open_blocks.pop_back();
  block.end_ns = now;
  b.blocks.push_back(std::move(block));
}

RawRecording ProfileRecorder::snapshot() const {
  struct Threaded {
    int thread;
    StartEvent start;
  };
  RawRecording r;
  std::vector<std::uint64_t> internal_ids;  // per op of r.ops
  std::vector<Threaded> starts;
  std::vector<StampEvent> ends, completions;
  std::vector<ReleaseEvent> releases;
  const std::int64_t now = now_ns();
  {
    std::lock_guard lock(mutex_);
    r.wall_ns = wall_ns_ + (recording_.load(std::memory_order_relaxed) ? now - session_begin_ns_ : 0);
    for (const auto& [thread, b] : buffers_) {
      std::lock_guard buffer_lock(b->mutex);
      for (const PushEvent& p : b->pushes) {
        RawOp& op = r.ops.emplace_back();
        internal_ids.push_back(p.op);
        op.name = p.name;
        op.device = p.device;
        op.property = p.property;
        op.async = p.async;
        op.push_ns = p.ns;
        if (p.ns >= 0) op.push_thread = b->thread;
        for (std::uint32_t i = p.first_var; i < p.first_var + p.var_count; ++i) {
          const VarRef& v = b->vars[i];
          (v.write ? op.writes : op.reads).push_back(v.label);
          (v.write ? op.write_ids : op.read_ids).push_back(v.id);
        }
      }
      for (const StartEvent& s : b->starts) starts.push_back({b->thread, s});
      ends.insert(ends.end(), b->ends.begin(), b->ends.end());
      completions.insert(completions.end(), b->completions.begin(), b->completions.end());
      releases.insert(releases.end(), b->releases.begin(), b->releases.end());
      r.blocks.insert(r.blocks.end(), b->blocks.begin(), b->blocks.end());
      if (b->role.frontend || b->role.ran_ops) {
        ThreadRole& role = r.threads[b->thread];
        role.frontend |= b->role.frontend;
        role.ran_ops |= b->role.ran_ops;
      }
    }
  }

  std::unordered_map<std::uint64_t, std::size_t> index;  // internal id -> r.ops
  for (std::size_t i = 0; i < internal_ids.size(); ++i) index.emplace(internal_ids[i], i);
  auto find = [&](std::uint64_t id) -> RawOp* {
    auto it = index.find(id);
    return it == index.end() ? nullptr : &r.ops[it->second];
  };
  for (const Threaded& s : starts) {
    if (RawOp* op = find(s.start.op)) {
      op->start_ns = s.start.ns;
      op->run_thread = s.thread;
      op->stream_index = s.start.stream_index;
    }
  }
  for (const StampEvent& e : ends) {
    if (RawOp* op = find(e.op)) op->end_ns = e.ns;
  }
  for (const StampEvent& c : completions) {
    if (RawOp* op = find(c.op)) op->complete_ns = c.ns;
  }
  for (const ReleaseEvent& rel : releases) {
    RawOp* to = find(rel.released);
    if (to != nullptr && find(rel.by) != nullptr) to->released_by = rel.by;  // internal until renumbered
  }

  // Ids in push order across threads (an op pushed before the recording
  // counts from its start), the same in every snapshot.
  std::vector<std::size_t> order(r.ops.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto first_seen = [&](std::size_t i) { return r.ops[i].push_ns >= 0 ? r.ops[i].push_ns : r.ops[i].start_ns; };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::make_tuple(first_seen(a), internal_ids[a]) < std::make_tuple(first_seen(b), internal_ids[b]);
  });
  std::unordered_map<std::uint64_t, std::uint64_t> reported;  // internal id -> RawOp::id
  std::vector<RawOp> sorted;
  sorted.reserve(r.ops.size());
  for (std::size_t i : order) {
    reported.emplace(internal_ids[i], sorted.size() + 1);
    sorted.push_back(std::move(r.ops[i]));
    sorted.back().id = sorted.size();
  }
  for (RawOp& op : sorted) {
    if (op.released_by != 0) op.released_by = reported.at(op.released_by);
  }
  r.ops = std::move(sorted);
  return r;
}

}  // namespace depengine::detail
