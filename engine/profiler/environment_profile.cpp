#include "engine/profiler/environment_profile.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>

#include "depengine/profiler.h"
#include "engine/engine_core.h"
#include "engine/profiler/chrome_trace.h"
#include "engine/profiler/profile_recorder.h"
#include "engine/profiler/timeline.h"

namespace depengine::detail {
namespace {

std::string numbered(const std::string& path, int n) {
  if (n == 1) return path;
  const std::size_t dot = path.rfind('.');
  const std::size_t slash = path.find_last_of('/');
  const bool has_extension = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  const std::string suffix = std::string(".").append(std::to_string(n));
  return has_extension ? path.substr(0, dot) + suffix + path.substr(dot) : path + suffix;
}

// Lives exactly as long as the engine (EngineCore::keep_alive), so it is
// destroyed after the engine's last operation completed: then it writes.
class EnvironmentProfile {
 public:
  explicit EnvironmentProfile(std::string path) : path_(std::move(path)) { recorder_.start(); }
  ~EnvironmentProfile() {
    recorder_.stop();
    std::ofstream out(path_, std::ios::binary);
    out << chrome_trace_json(make_timeline(recorder_.snapshot()), {});
    out.close();
    // A destructor cannot throw: say so on stderr instead.
    if (!out) std::fprintf(stderr, "depengine: DEPENGINE_PROFILE: cannot write '%s'\n", path_.c_str());
  }
  ProfileRecorder& recorder() { return recorder_; }

 private:
  std::string path_;
  ProfileRecorder recorder_;
};

}  // namespace

void profile_from_environment(EngineCore& core) {
  const char* path = std::getenv("DEPENGINE_PROFILE");
  if (path == nullptr || *path == '\0') return;
  if (!Profiler::available()) {
    // An empty trace would look like a run that did nothing.
    static std::once_flag warned;
    std::call_once(warned, [] {
      std::fprintf(stderr, "depengine: DEPENGINE_PROFILE ignored: the profiler's hooks were compiled out "
                           "(DEPENGINE_PROFILER_HOOKS=OFF)\n");
    });
    return;
  }
  static std::atomic<int> engines{0};
  auto profile = std::make_shared<EnvironmentProfile>(numbered(path, ++engines));
  core.set_observer(&profile->recorder());
  core.keep_alive(std::move(profile));
}

}  // namespace depengine::detail
