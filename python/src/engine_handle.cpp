#include "python/src/engine_handle.h"

#include <Python.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "engine/engine_core.h"
#include "python/src/python_runtime.h"

namespace depengine::python {

namespace {

std::mutex g_registry_mutex;
std::vector<std::weak_ptr<EngineHandle>> g_registry;
EngineRef g_default;

}  // namespace

EngineHandle::EngineHandle(const EngineOptions& options) : engine_(std::make_unique<Engine>(options)) {}

EngineHandle::~EngineHandle() {
  if (EngineCore::in_operation()) {
    // Destroying the engine here would wait for the operation running it.
    std::thread([engine = std::move(engine_)]() mutable { engine.reset(); }).detach();
    return;
  }
  const bool has_gil = PyGILState_Check();
  {
    ReleaseGil unlocked(has_gil);
    engine_.reset();
  }
  // What the engine's last operations dropped (their exceptions) goes now.
  if (has_gil) release_queued_refs();
}

EngineRef make_engine(const EngineOptions& options) {
  auto handle = std::make_shared<EngineHandle>(options);
  std::lock_guard lock(g_registry_mutex);
  std::erase_if(g_registry, [](const std::weak_ptr<EngineHandle>& w) { return w.expired(); });
  g_registry.push_back(handle);
  return handle;
}

std::vector<EngineRef> EngineHandle::live() {
  std::lock_guard lock(g_registry_mutex);
  std::vector<EngineRef> out;
  for (const auto& weak : g_registry) {
    if (auto handle = weak.lock()) out.push_back(std::move(handle));
  }
  return out;
}

EngineRef EngineHandle::default_engine() {
  std::lock_guard lock(g_registry_mutex);
  if (!g_default) {
    if (shutting_down()) throw std::runtime_error("depengine: the interpreter is shutting down");
    auto handle = std::make_shared<EngineHandle>(EngineOptions{});
    g_registry.push_back(handle);
    g_default = std::move(handle);
  }
  return g_default;
}

void EngineHandle::drop_default() {
  EngineRef last;
  {
    std::lock_guard lock(g_registry_mutex);
    last = std::move(g_default);
  }
  // `last` may be the final reference: destroyed here, outside the lock.
}

}  // namespace depengine::python
