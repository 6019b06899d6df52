#pragma once
// The readable summary depbench prints on stdout.

#include <string>
#include <vector>

#include "bench/depbench/harness.h"

namespace depbench {

std::string summary_table(const std::vector<ScenarioResult>& results, const Config& config);

}  // namespace depbench
