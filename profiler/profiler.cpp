// Profiler: the public face of ProfileRecorder.

#include "depengine/profiler.h"

#include <fstream>
#include <stdexcept>

#include "depengine/engine.h"
#include "engine/engine_core.h"
#include "profiler/chrome_trace.h"
#include "profiler/key_averages.h"
#include "profiler/profile_recorder.h"
#include "profiler/timeline.h"

namespace depengine {

Profiler::Profiler(Engine& engine)
    : core_(&engine.core()), recorder_(std::make_shared<detail::ProfileRecorder>()) {
  // The engine may still call a recorder that was just detached; it keeps
  // the (by then empty) recorder until it is destroyed.
  core_->keep_alive(recorder_);
}

Profiler::~Profiler() {
  stop();
  recorder_->clear();  // give the memory back; the engine keeps the empty shell
}

bool Profiler::available() {
#if !defined(DEPENGINE_PROFILER_HOOKS) || DEPENGINE_PROFILER_HOOKS
  return true;
#else
  return false;
#endif
}

void Profiler::start() {
  if (!available()) {
    throw std::logic_error(
        "depengine: this build has no profiler: its hooks were compiled out (DEPENGINE_PROFILER_HOOKS=OFF); "
        "rebuild with -DDEPENGINE_PROFILER_HOOKS=ON to profile");
  }
  detail::OpObserver* current = core_->observer();
  if (current != nullptr && current != recorder_.get()) {
    throw std::logic_error("depengine: another profiler is already recording this engine");
  }
  recorder_->start();
  core_->set_observer(recorder_.get());
}

void Profiler::stop() {
  if (core_->observer() == recorder_.get()) core_->set_observer(nullptr);
  recorder_->stop();
}

bool Profiler::running() const { return recorder_->recording(); }

void Profiler::clear() { recorder_->clear(); }

std::vector<ProfiledOp> Profiler::ops() const { return detail::make_timeline(recorder_->snapshot()).ops; }

std::vector<BlockingCall> Profiler::blocking_calls() const {
  return detail::make_timeline(recorder_->snapshot()).blocks;
}

double Profiler::wall_us() const { return static_cast<double>(recorder_->snapshot().wall_ns) * 1e-3; }

std::vector<OpStats> Profiler::key_averages(StatsOrder order) const {
  return detail::key_averages(detail::make_timeline(recorder_->snapshot()), order);
}

std::string Profiler::table(StatsOrder order, std::size_t max_rows) const {
  return detail::stats_table(key_averages(order), max_rows);
}

std::string Profiler::trace_json(const TraceOptions& options) const {
  return detail::chrome_trace_json(detail::make_timeline(recorder_->snapshot()), options);
}

void Profiler::write_trace(const std::string& path, const TraceOptions& options) const {
  const std::string json = trace_json(options);
  std::ofstream out(path, std::ios::binary);
  out << json;
  out.close();
  if (!out) throw std::runtime_error("depengine: cannot write the profile to '" + path + "'");
}

}  // namespace depengine
