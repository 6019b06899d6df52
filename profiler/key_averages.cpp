#include "profiler/key_averages.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace depengine::detail {

std::vector<OpStats> key_averages(const Timeline& t, StatsOrder order) {
  std::map<std::string, OpStats> by_name;
  for (const ProfiledOp& op : t.ops) {
    OpStats& s = by_name[op.name];
    s.name = op.name;
    ++s.count;
    s.total_us += op.duration_us;
    s.max_us = std::max(s.max_us, op.duration_us);
  }
  std::vector<OpStats> stats;
  for (auto& [name, s] : by_name) {
    s.mean_us = s.total_us / static_cast<double>(s.count);
    s.share = t.wall_us > 0 ? s.total_us / t.wall_us : 0;
    stats.push_back(std::move(s));
  }
  auto key = [order](const OpStats& s) {
    switch (order) {
      case StatsOrder::count:
        return static_cast<double>(s.count);
      case StatsOrder::mean:
        return s.mean_us;
      case StatsOrder::max:
        return s.max_us;
      case StatsOrder::total:
      case StatsOrder::name:
        break;
    }
    return s.total_us;
  };
  // Ties (and StatsOrder::name) fall back to the name, so the order is stable.
  std::stable_sort(stats.begin(), stats.end(), [&](const OpStats& a, const OpStats& b) {
    if (order == StatsOrder::name) return a.name < b.name;
    return key(a) > key(b);
  });
  return stats;
}

std::string stats_table(const std::vector<OpStats>& stats, std::size_t max_rows) {
  std::size_t width = 4;
  for (const OpStats& s : stats) width = std::max(width, s.name.size());
  width = std::min<std::size_t>(width, 40);
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-*s %8s %12s %11s %11s %7s\n", static_cast<int>(width), "name", "count",
                "total ms", "mean us", "max us", "share");
  out += line;
  const std::size_t rows = max_rows == 0 ? stats.size() : std::min(max_rows, stats.size());
  for (std::size_t i = 0; i < rows; ++i) {
    const OpStats& s = stats[i];
    std::snprintf(line, sizeof line, "%-*.*s %8zu %12.3f %11.2f %11.2f %6.1f%%\n", static_cast<int>(width),
                  static_cast<int>(width), s.name.c_str(), s.count, s.total_us / 1000.0, s.mean_us, s.max_us,
                  100.0 * s.share);
    out += line;
  }
  return out;
}

}  // namespace depengine::detail
