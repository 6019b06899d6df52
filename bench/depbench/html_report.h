#pragma once
// --report: one self-contained HTML file (well-formed XHTML, inline SVG and
// CSS, no scripts, nothing fetched): the summary table, a bar chart of sync
// against async per scenario, the roofline plot, gradient_sync's strategies
// against their ideals, and the timeline of one async run.

#include <string>
#include <vector>

#include "bench/depbench/harness.h"

namespace depbench {

/// `timeline` names the scenario whose trace is drawn (its result must
/// carry one); empty for none.
std::string html_report(const std::vector<ScenarioResult>& results, const Config& config, const std::string& timeline);

}  // namespace depbench
