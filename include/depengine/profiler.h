#pragma once
/// \file profiler.h
/// `Profiler`: where the time of an engine went.
///
/// While started, a profiler records every operation the engine runs (its
/// name, device, the variables it reads and writes, the thread or stream it
/// ran on, when it started and ended, and which operation released it), the
/// frontend's pushes and its blocking calls. The recording can be read back
/// as a list of operations, as an aggregate table (like `torch.profiler`'s
/// `key_averages`), or written as a Chrome trace-event file that Perfetto
/// (https://ui.perfetto.dev) and chrome://tracing open.
///
/// For a whole run, set `DEPENGINE_PROFILE=FILE.json`: every engine then
/// profiles itself from construction and writes FILE.json when destroyed
/// (the second engine of a process writes FILE.2.json, and so on). An engine
/// created with `EngineOptions::read_environment = false` ignores it.
///
/// Cost: when no profiler is started, each operation pays one predictable
/// branch per hook (a library built with DEPENGINE_PROFILER_HOOKS=OFF has no
/// hooks at all, and no profiler: see `available`). While recording, each
/// hook appends to a buffer of its own thread (no lock shared between
/// threads), a fraction of a microsecond per operation: profile runs of
/// microsecond-sized operations are slower than unprofiled ones.
///
/// Thread safety: `start`, `stop` and `clear` must not race with each
/// other; the readers (`ops`, `key_averages`, `trace_json`, ...) may be
/// called from any thread at any time, also while recording. One engine has
/// at most one started profiler (including the DEPENGINE_PROFILE one).
/// `start` and `stop` need the engine alive; the recording stays readable
/// after the engine is destroyed.
///
/// \code
///   depengine::Engine engine;
///   depengine::Profiler profiler(engine);
///   profiler.start();
///   run_my_workload(engine);
///   engine.wait_all();
///   profiler.stop();
///   std::cout << profiler.table(depengine::StatsOrder::total, 10);
///   profiler.write_trace("trace.json");   // open in https://ui.perfetto.dev
/// \endcode

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace depengine {

class Engine;
class EngineCore;

namespace detail {
class ProfileRecorder;
}

/// One operation that ran while the profiler recorded.
struct ProfiledOp {
  std::uint64_t id = 0;  ///< unique within the recording, in push order
  std::string name;      ///< the push's name ("(unnamed)" when none)
  std::string device;    ///< Device::to_string()
  /// Where it ran: "cpu worker 1", "frontend 0" (naive engine, or the thread
  /// that ran it), "emulated:0 compute stream 0", "cuda:0 copy D2H stream 1".
  std::string track;
  double start_us = 0;     ///< from the recording's origin
  double duration_us = 0;  ///< on a stream: from when the stream reached it to its completion
  std::vector<std::string> reads;   ///< variable names ("#slot" when unnamed)
  std::vector<std::string> writes;
  /// The same variables as identities, unique within the engine's life even
  /// where names repeat (every tensor is called "tensor") or slots are reused.
  std::vector<std::uint64_t> read_ids;
  std::vector<std::uint64_t> write_ids;
  bool async = false;         ///< pushed with push_async
  std::uint64_t released_by = 0;  ///< id of the op whose completion made it ready; 0 if none recorded
};

/// A blocking call (`wait_to_read`, `wait_to_write`, `wait_all`) on a frontend thread.
struct BlockingCall {
  std::string what;
  std::string track;
  double start_us = 0;
  double duration_us = 0;
};

/// Aggregate of the operations of one name.
struct OpStats {
  std::string name;
  std::size_t count = 0;
  double total_us = 0;
  double mean_us = 0;
  double max_us = 0;
  /// total_us over the recorded wall time; the shares of operations that ran
  /// in parallel add up to more than 1.
  double share = 0;
};

enum class StatsOrder {
  total,  ///< largest total time first
  count,  ///< most calls first
  mean,   ///< largest mean first
  max,    ///< largest single call first
  name,   ///< alphabetical
};

struct TraceOptions {
  /// Prefixed to the process names, to tell several recordings merged into
  /// one trace apart (depbench names each scenario).
  std::string label;
  /// Added to every process id, for the same reason.
  int pid_offset = 0;
};

class Profiler {
 public:
  /// Prepares a profiler for `engine`; nothing is recorded before `start`.
  explicit Profiler(Engine& engine);
  /// Stops recording (the engine must still be alive if it was recording).
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  /// Whether this build of the library can profile: false when it was built
  /// with DEPENGINE_PROFILER_HOOKS=OFF, which compiles the engine's hooks out.
  static bool available();

  /// Starts (or resumes) recording. Throws std::logic_error when another
  /// profiler is recording this engine, or when the hooks were compiled out
  /// (`available()` is false).
  void start();
  /// Stops recording. Operations still running are left out of the recording:
  /// call `wait_all` first to keep them. (An async operation completes when
  /// its Completion is called, which may be just before its function returns
  /// and ends its slice.)
  void stop();
  bool running() const;
  /// Forgets what was recorded.
  void clear();

  /// The operations recorded, by start time.
  std::vector<ProfiledOp> ops() const;
  std::vector<BlockingCall> blocking_calls() const;
  /// Time spent recording, summed over start/stop periods (up to now while running).
  double wall_us() const;

  std::vector<OpStats> key_averages(StatsOrder order = StatsOrder::total) const;
  /// `key_averages` as a text table; `max_rows` = 0 prints every name.
  std::string table(StatsOrder order = StatsOrder::total, std::size_t max_rows = 0) const;

  /// The recording in Chrome's trace-event format (JSON).
  std::string trace_json(const TraceOptions& options = {}) const;
  /// Writes `trace_json` to `path`; throws std::runtime_error when it cannot.
  void write_trace(const std::string& path, const TraceOptions& options = {}) const;

 private:
  EngineCore* core_;
  std::shared_ptr<detail::ProfileRecorder> recorder_;
};

}  // namespace depengine
