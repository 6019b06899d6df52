#include "engine/environment_profile.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>

#include "depengine/profiler.h"
#include "engine/engine_core.h"
#include "profiler/chrome_trace.h"
#include "profiler/profile_recorder.h"
#include "profiler/timeline.h"

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
  // The file is opened now, so that a path it cannot write fails the
  // engine's construction instead of a whole run's end.
  explicit EnvironmentProfile(std::string path) : path_(std::move(path)), out_(path_, std::ios::binary) {
    if (!out_) {
      throw std::invalid_argument("depengine: DEPENGINE_PROFILE: cannot write '" + path_ + "': " +
                                  std::strerror(errno));
    }
    recorder_.start();
  }
  ~EnvironmentProfile() {
    recorder_.stop();
    out_ << chrome_trace_json(make_timeline(recorder_.snapshot()), {});
    out_.close();
    // A destructor cannot throw: say so on stderr instead (a full disk).
    if (!out_) std::fprintf(stderr, "depengine: DEPENGINE_PROFILE: cannot write '%s'\n", path_.c_str());
  }
  ProfileRecorder& recorder() { return recorder_; }

 private:
  std::string path_;
  std::ofstream out_;
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
  // Numbered by the engines whose file could be opened.
  static std::mutex numbering;
  static int engines = 0;
  std::shared_ptr<EnvironmentProfile> profile;
  {
    std::lock_guard lock(numbering);
    profile = std::make_shared<EnvironmentProfile>(numbered(path, engines + 1));
    ++engines;
  }
  core.set_observer(&profile->recorder());
  core.keep_alive(std::move(profile));
}

}  // namespace depengine::detail
