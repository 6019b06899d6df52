#pragma once
// key_averages: per operation name, how often it ran and how long it took
// (count, total, mean, max, share of the recorded wall time), and the same
// as a text table.

#include <string>
#include <vector>

#include "depengine/profiler.h"
#include "profiler/timeline.h"

namespace depengine::detail {

std::vector<OpStats> key_averages(const Timeline& timeline, StatsOrder order);
std::string stats_table(const std::vector<OpStats>& stats, std::size_t max_rows);

}  // namespace depengine::detail
