#pragma once
// The randomized workload of the differential tests and of the `random_rw`
// benchmark: ops over a pool of variables, each reading a random subset and
// writing one variable with a value computed from what it read. Every op
// records the version of each variable it saw, so two runs can be compared
// bit for bit.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include <depengine/engine.h>

namespace depengine::testing {

struct RandomOp {
  std::vector<int> reads;  // distinct, never the written variable
  int write = 0;
};

inline std::vector<RandomOp> make_random_ops(std::uint64_t seed, int num_vars, int num_ops, int max_reads) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick_var(0, num_vars - 1);
  std::uniform_int_distribution<int> pick_count(0, max_reads);
  std::vector<RandomOp> ops(num_ops);
  for (RandomOp& op : ops) {
    op.write = pick_var(rng);
    const int n = pick_count(rng);
    for (int i = 0; i < n; ++i) {
      const int v = pick_var(rng);
      bool dup = v == op.write;
      for (int r : op.reads) dup = dup || r == v;
      if (!dup) op.reads.push_back(v);
    }
  }
  return ops;
}

inline std::uint64_t mix(std::uint64_t h, std::uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

/// The variables' values and write counts: plain memory, only ever touched
/// by operations, so the engine alone keeps them consistent.
struct RandomState {
  explicit RandomState(int num_vars) : value(num_vars, 0), version(num_vars, 0) {}
  std::vector<std::uint64_t> value;
  std::vector<std::uint64_t> version;
};

/// What one op saw: the versions of its reads and of its written variable,
/// and the value it wrote.
struct OpRecord {
  std::vector<std::uint64_t> seen_versions;
  std::uint64_t written = 0;
  friend bool operator==(const OpRecord&, const OpRecord&) = default;
};

/// The body of op `index`: reads, computes, writes, records.
inline void run_random_op(const RandomOp& op, int index, RandomState& state, OpRecord& record) {
  std::uint64_t h = mix(0, static_cast<std::uint64_t>(index));
  record.seen_versions.clear();
  for (int r : op.reads) {
    h = mix(h, state.value[r]);
    record.seen_versions.push_back(state.version[r]);
  }
  h = mix(h, state.value[op.write]);
  record.seen_versions.push_back(state.version[op.write]);
  state.value[op.write] = h;
  ++state.version[op.write];
  record.written = h;
}

/// Pushes op `index` of `ops` onto `engine`, writing into `state`/`records`.
/// `bytes`: the op's PushOptions::bytes (the ops touch a few words; a
/// larger figure makes the engine treat them as ops on much data).
inline void push_random_op(Engine& engine, const std::vector<Var>& vars, const std::vector<RandomOp>& ops,
                           int index, RandomState& state, std::vector<OpRecord>& records, std::size_t bytes = 0) {
  const RandomOp& op = ops[index];
  std::vector<Var> reads;
  reads.reserve(op.reads.size());
  for (int r : op.reads) reads.push_back(vars[r]);
  engine.push([&op, index, &state, &records](RunContext&) { run_random_op(op, index, state, records[index]); },
              reads, {vars[op.write]}, {.bytes = bytes});
}

}  // namespace depengine::testing
