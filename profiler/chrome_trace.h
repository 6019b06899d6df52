#pragma once
// Writes a Timeline in Chrome's trace-event format (the JSON that Perfetto
// and chrome://tracing open): complete slices ("X") for operations and
// blocking calls, instants ("i") for pushes, flow events ("s"/"f") from each
// operation to those it released, and metadata naming processes and tracks.

#include <string>

#include "depengine/profiler.h"
#include "profiler/timeline.h"

namespace depengine::detail {

std::string chrome_trace_json(const Timeline& timeline, const TraceOptions& options);

}  // namespace depengine::detail
