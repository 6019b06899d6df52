#include "bench/depbench/ideal.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace depbench {
namespace {

using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;
Key key(depengine::Var v) { return {v.engine_id(), v.slot(), v.generation()}; }

}  // namespace

double* OpTimes::add(depengine::VarList reads, depengine::VarList writes, std::string resource) {
  Op& op = ops_.emplace_back();
  op.reads.assign(reads.begin(), reads.end());
  op.writes.assign(writes.begin(), writes.end());
  op.resource = std::move(resource);
  return &op.seconds;
}

double OpTimes::work() const {
  double w = 0;
  for (const Op& op : ops_) w += op.seconds;
  return w;
}

double OpTimes::critical_path() const {
  // Earliest finish with unlimited workers, under the engine's rule: an op
  // starts after the last write to what it reads or writes, and a write
  // also after the reads since that write.
  std::map<Key, double> written_at;  // finish of the last write
  std::map<Key, double> read_until;  // latest finish of the reads since
  double longest = 0;
  for (const Op& op : ops_) {
    double start = 0;
    for (depengine::Var v : op.reads) start = std::max(start, written_at[key(v)]);
    for (depengine::Var v : op.writes) start = std::max({start, written_at[key(v)], read_until[key(v)]});
    const double finish = start + op.seconds;
    for (depengine::Var v : op.reads) read_until[key(v)] = std::max(read_until[key(v)], finish);
    for (depengine::Var v : op.writes) {
      written_at[key(v)] = finish;
      read_until[key(v)] = finish;
    }
    longest = std::max(longest, finish);
  }
  return longest;
}

double OpTimes::ideal_speedup(int cpu_workers) const {
  std::map<std::string, double> per_resource;
  for (const Op& op : ops_) per_resource[op.resource] += op.seconds;
  double bound = critical_path();
  for (const auto& [resource, seconds] : per_resource) {
    // A device stream runs one op at a time; the CPU has its workers.
    bound = std::max(bound, resource == "cpu" ? seconds / std::max(1, cpu_workers) : seconds);
  }
  return bound > 0 ? work() / bound : 1.0;
}

}  // namespace depbench
