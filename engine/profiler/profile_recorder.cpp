#include "engine/profiler/profile_recorder.h"

#include <atomic>

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

}  // namespace

ProfileRecorder::ProfileRecorder() : origin_(std::chrono::steady_clock::now()) {}

std::int64_t ProfileRecorder::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin_).count();
}

void ProfileRecorder::start() {
  const std::int64_t now = now_ns();
  std::lock_guard lock(mutex_);
  if (recording_) return;
  recording_ = true;
  session_begin_ns_ = now;
}

void ProfileRecorder::stop() {
  const std::int64_t now = now_ns();
  std::lock_guard lock(mutex_);
  if (!recording_) return;
  recording_ = false;
  wall_ns_ += now - session_begin_ns_;
}

bool ProfileRecorder::recording() const {
  std::lock_guard lock(mutex_);
  return recording_;
}

void ProfileRecorder::clear() {
  const std::int64_t now = now_ns();
  std::lock_guard lock(mutex_);
  ops_.clear();
  ops_.shrink_to_fit();
  live_.clear();
  blocks_.clear();
  open_blocks_.clear();
  threads_.clear();
  wall_ns_ = 0;
  session_begin_ns_ = now;
}

RawRecording ProfileRecorder::snapshot() const {
  const std::int64_t now = now_ns();
  std::lock_guard lock(mutex_);
  RawRecording r;
  r.ops = ops_;
  r.blocks = blocks_;
  r.threads = threads_;
  r.wall_ns = wall_ns_ + (recording_ ? now - session_begin_ns_ : 0);
  return r;
}

RawOp& ProfileRecorder::new_op(const OpBlock& op) {
  RawOp& raw = ops_.emplace_back();
  raw.id = next_id_++;
  raw.name = op.name.empty() ? "(unnamed)" : op.name;
  raw.device = op.device;
  raw.property = op.property;
  raw.async = op.kind == OpKind::Async;
  for (const Entry& e : op.entries) {
    (e.write ? raw.writes : raw.reads).push_back(var_label(*e.var));
    (e.write ? raw.write_ids : raw.read_ids).push_back(var_id(*e.var));
  }
  live_[&op] = ops_.size() - 1;
  return raw;
}

RawOp* ProfileRecorder::live(const OpBlock& op) {
  auto it = live_.find(&op);
  return it == live_.end() ? nullptr : &ops_[it->second];
}

void ProfileRecorder::retire_if_done(const OpBlock& op, const RawOp& raw) {
  // An async op may complete before its function returns, so the last of
  // on_end and on_complete retires it.
  if (raw.complete_ns >= 0 && (raw.start_ns < 0 || raw.end_ns >= 0)) live_.erase(&op);
}

void ProfileRecorder::on_push(const OpBlock& op) {
  const std::int64_t now = now_ns();
  const int thread = thread_number();
  const bool frontend = !EngineCore::in_operation();
  std::lock_guard lock(mutex_);
  if (!recording_ || !is_operation(op)) return;
  RawOp& raw = new_op(op);
  raw.push_ns = now;
  raw.push_thread = thread;
  if (frontend) threads_[thread].frontend = true;
}

void ProfileRecorder::on_start(const OpBlock& op, const RunContext& ctx) {
  const std::int64_t now = now_ns();
  const int thread = thread_number();
  std::lock_guard lock(mutex_);
  RawOp* raw = live(op);
  if (raw == nullptr) {
    if (!recording_) return;
    raw = &new_op(op);  // pushed before the recording started
  }
  raw->start_ns = now;
  raw->run_thread = thread;
  raw->stream_index = ctx.stream_index;
  // A stream's thread gets no track of its own: its ops go on the stream's.
  if (op.device.is_cpu() || ctx.stream_index < 0) threads_[thread].ran_ops = true;
}

void ProfileRecorder::on_end(const OpBlock& op, const RunContext&) {
  const std::int64_t now = now_ns();
  std::lock_guard lock(mutex_);
  RawOp* raw = live(op);
  if (raw == nullptr) return;
  raw->end_ns = now;
  retire_if_done(op, *raw);
}

void ProfileRecorder::on_complete(const OpBlock& op) {
  const std::int64_t now = now_ns();
  std::lock_guard lock(mutex_);
  RawOp* raw = live(op);
  if (raw == nullptr) return;
  raw->complete_ns = now;
  retire_if_done(op, *raw);
}

void ProfileRecorder::on_release(const OpBlock& by, const OpBlock& released) {
  std::lock_guard lock(mutex_);
  RawOp* from = live(by);
  RawOp* to = live(released);
  if (from != nullptr && to != nullptr) to->released_by = from->id;
}

void ProfileRecorder::on_block_begin(const char* what) {
  const std::int64_t now = now_ns();
  const int thread = thread_number();
  std::lock_guard lock(mutex_);
  if (!recording_) return;
  open_blocks_[thread].push_back({what, thread, now, now});
  threads_[thread].frontend = true;
}

void ProfileRecorder::on_block_end(const char*) {
  const std::int64_t now = now_ns();
  const int thread = thread_number();
  std::lock_guard lock(mutex_);
  auto it = open_blocks_.find(thread);
  if (it == open_blocks_.end() || it->second.empty()) return;  // begun before the recording
  RawBlock block = std::move(it->second.back());
  it->second.pop_back();
  block.end_ns = now;
  blocks_.push_back(std::move(block));
}

}  // namespace depengine::detail
