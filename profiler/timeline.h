#pragma once
// Timeline: turns a raw recording into what a viewer shows — tracks (one per
// frontend thread, per CPU worker and per device stream) with the slices of
// operations and blocking calls on them, and the frontend's pushes.

#include <string>
#include <vector>

#include "depengine/profiler.h"
#include "profiler/profile_recorder.h"

namespace depengine::detail {

struct Track {
  std::string process;  // "host", or a device: "emulated:0"
  std::string name;     // "frontend 0", "cpu worker 1", "compute stream 0", "copy D2H stream 1"
  int pid = 0;
  int tid = 0;
};

struct Push {
  std::uint64_t op_id = 0;
  std::string name;
  double ts_us = 0;
  int track = 0;
};

struct Timeline {
  std::vector<Track> tracks;
  std::vector<ProfiledOp> ops;  // by start time
  std::vector<int> op_track;    // index into tracks, per op
  std::vector<BlockingCall> blocks;
  std::vector<int> block_track;
  std::vector<Push> pushes;
  double wall_us = 0;
};

Timeline make_timeline(const RawRecording& recording);

}  // namespace depengine::detail
