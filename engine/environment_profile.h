#pragma once
// DEPENGINE_PROFILE=FILE.json: every engine profiles its whole life and
// writes FILE.json when destroyed (the n-th engine of the process, n > 1,
// writes FILE.n.json so that engines do not overwrite each other).

namespace depengine {
class EngineCore;
}

namespace depengine::detail {

/// Called by the Engine constructor; does nothing unless DEPENGINE_PROFILE is
/// set. Declared on the engine's floor, defined by the profiler
/// (profiler/environment_profile.cpp), which the engine does not include.
void profile_from_environment(EngineCore& core);

}  // namespace depengine::detail
