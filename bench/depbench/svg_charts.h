#pragma once
// The report's charts, as inline SVG (well-formed XML, no scripts, no
// external resources).

#include <string>
#include <vector>

#include "bench/depbench/harness.h"

namespace depbench {

/// Escapes text for XML content and attribute values.
std::string xml_escape(const std::string& text);

/// Per scenario, the sync and the async time as bars (sync = full width),
/// with a mark where the ideal async time would be.
std::string speedup_bar_chart(const std::vector<ScenarioResult>& results);

/// Log-log roofline: the compute and bandwidth ceilings, and each probe op
/// at (arithmetic intensity, attained GFLOP/s). Empty if `roofline` has no
/// per-op table.
std::string roofline_plot(const ScenarioResult& roofline);

/// gradient_sync: per strategy its sync and async time as bars on one
/// scale, with a mark at its bandwidth-based ideal. Empty without strategies.
std::string strategy_chart(const ScenarioResult& gradient_sync);

/// One row per track, one rectangle per op (colour by name, tooltip with
/// details); at most `max_ops` ops are drawn, the earliest.
std::string timeline_chart(const Trace& trace, std::size_t max_ops = 3000);

}  // namespace depbench
