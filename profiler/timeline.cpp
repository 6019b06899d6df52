#include "profiler/timeline.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

namespace depengine::detail {
namespace {

constexpr double kUsPerNs = 1e-3;

const char* stream_kind(OpProperty property) {
  switch (property) {
    case OpProperty::CopyToDevice:
      return "copy H2D stream ";
    case OpProperty::CopyFromDevice:
      return "copy D2H stream ";
    case OpProperty::DeviceToDevice:
      return "copy P2P stream ";
    case OpProperty::Normal:
    case OpProperty::CpuPrioritized:
      break;
  }
  return "compute stream ";
}

bool on_stream(const RawOp& op) { return !op.device.is_cpu() && op.stream_index >= 0; }

// Assigns tracks: host threads in process 1, named by role in order of
// their thread numbers; each device's streams in a process of their own.
class TrackTable {
 public:
  explicit TrackTable(const std::unordered_map<int, ThreadRole>& roles) {
    std::vector<int> numbers;
    for (const auto& [number, role] : roles) numbers.push_back(number);
    std::sort(numbers.begin(), numbers.end());
    int frontends = 0, workers = 0;
    for (int number : numbers) {
      const bool frontend = roles.at(number).frontend;
      const std::string name = frontend ? "frontend " + std::to_string(frontends++)
                                        : "cpu worker " + std::to_string(workers++);
      thread_track_[number] = add("host", name, 1, number + 1);
    }
  }

  int thread(int number) {
    auto it = thread_track_.find(number);
    if (it != thread_track_.end()) return it->second;
    // A thread that neither pushed nor ran ops (a blocking call begun before the recording).
    return thread_track_[number] = add("host", "thread " + std::to_string(number), 1, number + 1);
  }

  int stream(const RawOp& op) {
    const std::string process = op.device.to_string();
    const std::string name = stream_kind(op.property) + std::to_string(op.stream_index);
    auto key = std::make_pair(process, name);
    auto it = stream_track_.find(key);
    if (it != stream_track_.end()) return it->second;
    auto [pid_it, fresh] = device_pid_.try_emplace(process, static_cast<int>(device_pid_.size()) + 2);
    (void)fresh;
    const int tid = static_cast<int>(stream_track_.size()) + 1;
    return stream_track_[key] = add(process, name, pid_it->second, tid);
  }

  std::vector<Track> tracks;

 private:
  int add(std::string process, std::string name, int pid, int tid) {
    tracks.push_back({std::move(process), std::move(name), pid, tid});
    return static_cast<int>(tracks.size()) - 1;
  }

  std::map<int, int> thread_track_;
  std::map<std::pair<std::string, std::string>, int> stream_track_;
  std::map<std::string, int> device_pid_;
};

}  // namespace

Timeline make_timeline(const RawRecording& recording) {
  Timeline t;
  TrackTable tracks(recording.threads);

  // Slices. On a stream, operations run one after another in launch order:
  // one starts when it was launched or when the previous one completed,
  // whichever is later, and ends at its completion.
  std::vector<const RawOp*> ran;
  for (const RawOp& op : recording.ops) {
    if (op.start_ns < 0) continue;  // skipped, or not started while recording
    const bool done = on_stream(op) ? op.complete_ns >= 0 : op.end_ns >= 0;
    if (done) ran.push_back(&op);
  }
  std::sort(ran.begin(), ran.end(), [](const RawOp* a, const RawOp* b) {
    return std::tie(a->start_ns, a->id) < std::tie(b->start_ns, b->id);
  });
  std::map<int, std::int64_t> stream_free_at;
  std::map<std::uint64_t, bool> executed;
  for (const RawOp* op : ran) executed[op->id] = true;
  for (const RawOp* op : ran) {
    std::int64_t begin = op->start_ns;
    std::int64_t end = op->end_ns;
    int track;
    if (on_stream(*op)) {
      track = tracks.stream(*op);
      begin = std::max(begin, stream_free_at[track]);
      end = std::max(op->complete_ns, begin);
      stream_free_at[track] = end;
    } else {
      track = tracks.thread(op->run_thread);
    }
    ProfiledOp& p = t.ops.emplace_back();
    p.id = op->id;
    p.name = op->name;
    p.device = op->device.to_string();
    p.start_us = static_cast<double>(begin) * kUsPerNs;
    p.duration_us = static_cast<double>(end - begin) * kUsPerNs;
    p.reads = op->reads;
    p.writes = op->writes;
    p.read_ids = op->read_ids;
    p.write_ids = op->write_ids;
    p.async = op->async;
    p.released_by = executed.count(op->released_by) ? op->released_by : 0;
    t.op_track.push_back(track);
  }
  // Stream slices may have moved later than their launch: keep "by start time".
  std::vector<std::size_t> order(t.ops.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return t.ops[a].start_us < t.ops[b].start_us; });
  std::vector<ProfiledOp> sorted_ops;
  std::vector<int> sorted_tracks;
  for (std::size_t i : order) {
    sorted_ops.push_back(std::move(t.ops[i]));
    sorted_tracks.push_back(t.op_track[i]);
  }
  t.ops = std::move(sorted_ops);
  t.op_track = std::move(sorted_tracks);

  for (const RawOp& op : recording.ops) {
    if (op.push_ns < 0) continue;
    t.pushes.push_back({op.id, op.name, static_cast<double>(op.push_ns) * kUsPerNs, tracks.thread(op.push_thread)});
  }
  for (const RawBlock& b : recording.blocks) {
    const int track = tracks.thread(b.thread);
    t.blocks.push_back({b.what, "", static_cast<double>(b.begin_ns) * kUsPerNs,
                        static_cast<double>(b.end_ns - b.begin_ns) * kUsPerNs});
    t.block_track.push_back(track);
  }

  t.tracks = std::move(tracks.tracks);
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const Track& tr = t.tracks[t.op_track[i]];
    t.ops[i].track = tr.process == "host" ? tr.name : tr.process + " " + tr.name;
  }
  for (std::size_t i = 0; i < t.blocks.size(); ++i) t.blocks[i].track = t.tracks[t.block_track[i]].name;
  t.wall_us = static_cast<double>(recording.wall_ns) * kUsPerNs;
  return t;
}

}  // namespace depengine::detail
