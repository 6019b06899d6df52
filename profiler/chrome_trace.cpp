#include "profiler/chrome_trace.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace depengine::detail {

using nlohmann::json;

std::string chrome_trace_json(const Timeline& t, const TraceOptions& options) {
  json events = json::array();
  auto pid = [&](const Track& track) { return track.pid + options.pid_offset; };

  std::set<int> named_processes;
  for (const Track& track : t.tracks) {
    if (named_processes.insert(track.pid).second) {
      events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid(track)}, {"tid", 0},
                        {"args", {{"name", options.label.empty() ? track.process : options.label + ": " + track.process}}}});
    }
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid(track)}, {"tid", track.tid},
                      {"args", {{"name", track.name}}}});
  }

  std::map<std::uint64_t, std::size_t> index_of;
  for (std::size_t i = 0; i < t.ops.size(); ++i) index_of[t.ops[i].id] = i;
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const ProfiledOp& op = t.ops[i];
    const Track& track = t.tracks[t.op_track[i]];
    events.push_back({{"ph", "X"}, {"cat", "op"}, {"name", op.name}, {"pid", pid(track)}, {"tid", track.tid},
                      {"ts", op.start_us}, {"dur", op.duration_us},
                      {"args", {{"id", op.id}, {"device", op.device}, {"reads", op.reads},
                                {"writes", op.writes}, {"async", op.async}}}});
    if (op.released_by == 0) continue;
    // The arrow starts inside the releasing slice and binds to the start of
    // this one ("bp": "e": the enclosing slice).
    const std::size_t from = index_of.at(op.released_by);
    const Track& from_track = t.tracks[t.op_track[from]];
    events.push_back({{"ph", "s"}, {"cat", "release"}, {"name", "released"}, {"id", op.id},
                      {"pid", pid(from_track)}, {"tid", from_track.tid}, {"ts", t.ops[from].start_us}});
    events.push_back({{"ph", "f"}, {"bp", "e"}, {"cat", "release"}, {"name", "released"}, {"id", op.id},
                      {"pid", pid(track)}, {"tid", track.tid}, {"ts", op.start_us}});
  }
  for (std::size_t i = 0; i < t.blocks.size(); ++i) {
    const BlockingCall& b = t.blocks[i];
    const Track& track = t.tracks[t.block_track[i]];
    events.push_back({{"ph", "X"}, {"cat", "blocking"}, {"name", b.what}, {"pid", pid(track)},
                      {"tid", track.tid}, {"ts", b.start_us}, {"dur", b.duration_us}});
  }
  for (const Push& p : t.pushes) {
    const Track& track = t.tracks[p.track];
    events.push_back({{"ph", "i"}, {"s", "t"}, {"cat", "push"}, {"name", "push " + p.name}, {"pid", pid(track)},
                      {"tid", track.tid}, {"ts", p.ts_us}, {"args", {{"id", p.op_id}}}});
  }
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump();
}

}  // namespace depengine::detail
