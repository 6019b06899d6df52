// Randomized differential test: the same random program of CPU and device
// operations (on several streams of two emulated devices, with copies,
// failures, blocking calls and deletions) gives the same results on the
// threaded engine as on the naive engine, which runs it sequentially.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <depengine/emulated_device.h>
#include <depengine/engine.h>

#include "tests/support/pinned_neighbours.h"

using namespace depengine;

namespace {

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  a ^= b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2);
  return a * 0xff51afd7ed558ccdull;
}

// What a program observed: results of its blocking calls, the values
// released by its deletions, the final values. Equal for equal semantics.
struct Trace {
  std::vector<std::string> events;
  friend bool operator==(const Trace&, const Trace&) = default;
};

std::string outcome(Engine& engine, Var v, const std::uint64_t& value) {
  try {
    engine.wait_to_write(v);
    return std::to_string(value);
  } catch (const std::runtime_error& e) {
    return std::string("error: ") + e.what();
  }
}

Trace run_program(EngineKind kind, unsigned seed) {
  Engine engine({.kind = kind, .cpu_threads = 2, .read_environment = false});
  add_emulated_device(engine, 0, {.compute_streams = 3});
  add_emulated_device(engine, 1, {.compute_streams = 1});
  constexpr int kVars = 8;
  constexpr int kOps = 300;
  std::mt19937 rng(seed);
  auto chance = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };

  std::deque<std::uint64_t> storage;  // one slot per variable ever created: stable addresses
  std::deque<std::uint64_t> released;
  std::vector<Var> vars(kVars);
  std::vector<std::uint64_t*> slot(kVars);
  auto create = [&](int i) {
    storage.push_back(i);
    slot[i] = &storage.back();
    vars[i] = engine.new_var("v" + std::to_string(i));
  };
  for (int i = 0; i < kVars; ++i) create(i);

  Trace trace;
  for (int op = 0; op < kOps; ++op) {
    if (chance(4)) {
      // Covers a write made earlier by a device op, on whatever stream.
      const int i = static_cast<int>(rng() % kVars);
      trace.events.push_back("wait v" + std::to_string(i) + " = " + outcome(engine, vars[i], *slot[i]));
      continue;
    }
    if (chance(3)) {
      const int i = static_cast<int>(rng() % kVars);
      released.push_back(0);
      std::uint64_t* value = slot[i];
      std::uint64_t* out = &released.back();
      engine.delete_var(vars[i], [value, out] { *out = *value; });
      create(i);
      continue;
    }
    std::vector<Var> reads, writes;
    std::vector<std::uint64_t*> read_slots, write_slots;
    for (int i = 0; i < kVars; ++i) {
      const int r = static_cast<int>(rng() % 100);
      if (r < 15) {
        reads.push_back(vars[i]);
        read_slots.push_back(slot[i]);
      } else if (r < 27) {
        writes.push_back(vars[i]);
        write_slots.push_back(slot[i]);
      }
    }
    if (writes.empty()) {
      const int i = static_cast<int>(rng() % kVars);
      const auto it = std::find(reads.begin(), reads.end(), vars[i]);
      if (it != reads.end()) {
        read_slots.erase(read_slots.begin() + (it - reads.begin()));
        reads.erase(it);
      }
      writes.push_back(vars[i]);
      write_slots.push_back(slot[i]);
    }
    static constexpr OpProperty kProperties[] = {OpProperty::Normal, OpProperty::Normal, OpProperty::CopyToDevice,
                                                 OpProperty::CopyFromDevice, OpProperty::DeviceToDevice};
    const int where = static_cast<int>(rng() % 5);  // cpu, or one of the devices
    PushOptions options;
    options.device = where < 2 ? Device::cpu() : Device::emulated(where == 4 ? 1 : 0);
    options.property = options.device.is_cpu() ? OpProperty::Normal : kProperties[rng() % 5];
    const bool fails = chance(3);
    const auto nap = std::chrono::microseconds(chance(20) ? rng() % 200 : 0);
    const std::uint64_t id = op;
    engine.push(
        [=](RunContext&) {
          if (nap.count() > 0) std::this_thread::sleep_for(nap);
          if (fails) throw std::runtime_error("op " + std::to_string(id) + " failed");
          std::uint64_t h = id;
          for (const std::uint64_t* r : read_slots) h = mix(h, *r);
          for (std::uint64_t* w : write_slots) *w = mix(*w, h);
        },
        reads, writes, options);
  }
  for (int i = 0; i < kVars; ++i) {
    trace.events.push_back("final v" + std::to_string(i) + " = " + outcome(engine, vars[i], *slot[i]));
  }
  // Failures of deleted variables surface here; which one comes first
  // depends on completion order, so only whether there is one is compared.
  bool unreported = false;
  try {
    engine.wait_all();
  } catch (const std::runtime_error&) {
    unreported = true;
  }
  trace.events.push_back(unreported ? "wait_all: error" : "wait_all: ok");
  for (std::uint64_t r : released) trace.events.push_back("released " + std::to_string(r));
  return trace;
}

void expect_threaded_matches_naive(unsigned seeds) {
  for (unsigned seed = 1; seed <= seeds; ++seed) {
    const Trace expected = run_program(EngineKind::Naive, seed);
    const Trace actual = run_program(EngineKind::Threaded, seed);
    ASSERT_EQ(expected.events.size(), actual.events.size()) << "seed " << seed;
    for (std::size_t i = 0; i < expected.events.size(); ++i) {
      ASSERT_EQ(expected.events[i], actual.events[i]) << "seed " << seed << ", event " << i;
    }
  }
}

TEST(EmulatedDeviceRandom, ThreadedMatchesNaive) { expect_threaded_matches_naive(40); }

// Beside busy neighbours (pinned) the CPU ops a frontend's pushes make ready
// are held for it, while the device's run on its stream threads.
TEST(EmulatedDeviceRandom, ThreadedMatchesNaiveBesideBusyNeighbours) {
  const PinnedNeighbours busy(true);
  expect_threaded_matches_naive(20);
}

}  // namespace
