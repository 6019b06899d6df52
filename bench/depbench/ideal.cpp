#include "bench/depbench/ideal.h"

#include <algorithm>
#include <map>

namespace depbench {
namespace {

std::vector<std::string> keys(depengine::VarList vars) {
  std::vector<std::string> out;
  for (depengine::Var v : vars) {
    out.push_back(std::to_string(v.engine_id()) + ":" + std::to_string(v.slot()) + ":" +
                  std::to_string(v.generation()));
  }
  return out;
}

}  // namespace

double* OpTimes::add(depengine::VarList reads, depengine::VarList writes, std::string resource) {
  return add_keys(keys(reads), keys(writes), std::move(resource));
}

double* OpTimes::add(const std::vector<std::uint64_t>& reads, const std::vector<std::uint64_t>& writes,
                     std::string resource) {
  auto as_keys = [](const std::vector<std::uint64_t>& ids) {
    std::vector<std::string> out;
    for (std::uint64_t id : ids) out.push_back(std::string("p").append(std::to_string(id)));
    return out;
  };
  return add_keys(as_keys(reads), as_keys(writes), std::move(resource));
}

double* OpTimes::add_keys(std::vector<std::string> reads, std::vector<std::string> writes, std::string resource) {
  Op& op = ops_.emplace_back();
  op.reads = std::move(reads);
  op.writes = std::move(writes);
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
  std::map<std::string, double> written_at;  // finish of the last write
  std::map<std::string, double> read_until;  // latest finish of the reads since
  double longest = 0;
  for (const Op& op : ops_) {
    double start = 0;
    for (const std::string& v : op.reads) start = std::max(start, written_at[v]);
    for (const std::string& v : op.writes) start = std::max({start, written_at[v], read_until[v]});
    const double finish = start + op.seconds;
    for (const std::string& v : op.reads) read_until[v] = std::max(read_until[v], finish);
    for (const std::string& v : op.writes) {
      written_at[v] = finish;
      read_until[v] = finish;
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
