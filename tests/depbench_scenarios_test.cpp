// depbench's scenarios and its ideal-speedup arithmetic, run in-process at a
// tiny size. Behaviour only: equal results, consistent numbers, never timing.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include <depengine/cuda_memory.h>
#include <depengine/engine.h>
#include <depengine/profiler.h>

#include "bench/depbench/harness.h"
#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/gradient_sync.h"

using namespace depbench;

namespace {

Config tiny() {
  Config c;
  c.size = 0.02;
  c.repeat = 1;
  return c;
}

}  // namespace

class Scenarios : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { init_kernels(); }
};

TEST_P(Scenarios, BothModesGiveTheSameResultsAndConsistentNumbers) {
  for (const auto& scenario : all_scenarios()) {
    if (scenario->name() != GetParam()) continue;
    const depengine::TraceOptions trace{.label = GetParam()};
    const ScenarioResult r = run_scenario(*scenario, tiny(), &trace);
    EXPECT_TRUE(r.results_equal);
    ASSERT_EQ(r.sync.runs.size(), 1u);
    ASSERT_EQ(r.async.runs.size(), 1u);
    EXPECT_GT(r.sync.seconds, 0);
    EXPECT_GT(r.async.seconds, 0);
    EXPECT_DOUBLE_EQ(r.speedup, r.sync.seconds / r.async.seconds);
    EXPECT_FALSE(r.description.empty());
    EXPECT_FALSE(r.ideal_formula.empty());
    if (!depengine::Profiler::available()) {
      // DEPENGINE_PROFILER_HOOKS=OFF: no trace, and training_step and
      // data_parallel cannot measure their ideal speedup.
      EXPECT_FALSE(r.trace.has_value());
      if (GetParam() == "training_step" || GetParam() == "hybridize" || GetParam() == "data_parallel") {
        EXPECT_TRUE(std::isnan(r.ideal_speedup));
      } else {
        EXPECT_GT(r.ideal_speedup, 0);
      }
      return;
    }
    EXPECT_GT(r.ideal_speedup, 0);
    ASSERT_TRUE(r.trace.has_value());
    EXPECT_FALSE(r.trace->ops.empty());
    // The footprint depbench checks before running bounds what a run did.
    EXPECT_GE(scenario->footprint(tiny()).ops, static_cast<double>(r.trace->ops.size()));
    return;
  }
  FAIL() << "no scenario named " << GetParam();
}

// The counts a footprint checks are the ones the run uses (where the run
// reports them as metrics).
TEST_P(Scenarios, FootprintCountsAreTheRunsOwn) {
  const std::map<std::string, std::string> metric_of = {
      {"ops per run", "ops"}, {"matrix side", "matrix_side"}, {"batch rows", "batch_rows"}, {"epochs", "epochs"}};
  for (const auto& scenario : all_scenarios()) {
    if (scenario->name() != GetParam()) continue;
    const Footprint footprint = scenario->footprint(tiny());
    EXPECT_FALSE(footprint.int_counts.empty());
    EXPECT_GT(footprint.ops, 0);
    EXPECT_GT(footprint.host_bytes, 0);
    const Outcome outcome = scenario->run(Mode::async, tiny(), nullptr);
    for (const auto& [what, count] : footprint.int_counts) {
      auto metric = metric_of.find(what);
      if (metric == metric_of.end() || !outcome.metrics.contains(metric->second)) continue;
      EXPECT_EQ(outcome.metrics.at(metric->second), count) << what;
    }
    return;
  }
  FAIL() << "no scenario named " << GetParam();
}

// A scenario run directly at a size whose counts do not fit an int (no
// footprint check in between) throws rather than wrapping them into small
// ones.
TEST_P(Scenarios, CountsBeyondAnIntThrowInsteadOfWrapping) {
  Config huge = tiny();
  huge.size = 1e30;  // even a cube root (a matrix side) is beyond an int
  for (const auto& scenario : all_scenarios()) {
    if (scenario->name() != GetParam()) continue;
    bool some_count_overflows = false;
    for (const auto& [what, count] : scenario->footprint(huge).int_counts) {
      some_count_overflows = some_count_overflows || count > std::numeric_limits<int>::max();
    }
    ASSERT_TRUE(some_count_overflows);
    EXPECT_THROW(scenario->run(Mode::sync, huge, nullptr), std::out_of_range);
    return;
  }
  FAIL() << "no scenario named " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(All, Scenarios,
                         ::testing::Values("roofline", "frontend_backend", "auto_parallel", "overlap_copy_compute",
                                           "data_loading", "training_step", "hybridize", "data_parallel",
                                           "gradient_sync"));

// The scenarios with device work, on emulated devices: same results, and the
// traced run's device ops sit on the devices' stream tracks.
TEST(Scenarios, DeviceScenariosOnEmulatedDevices) {
  init_kernels();
  Config config = tiny();
  config.device = "emulated";
  for (const auto& scenario : all_scenarios()) {
    const std::string name = scenario->name();
    if (name != "auto_parallel" && name != "overlap_copy_compute" && name != "data_loading") continue;
    const depengine::TraceOptions trace{.label = name};
    const ScenarioResult r = run_scenario(*scenario, config, &trace);
    EXPECT_TRUE(r.results_equal) << name;
    if (!depengine::Profiler::available()) continue;  // no trace without the profiler's hooks
    ASSERT_TRUE(r.trace.has_value());
    bool on_stream = false;
    for (const auto& op : r.trace->ops) on_stream = on_stream || op.track.rfind("emulated:", 0) == 0;
    EXPECT_TRUE(on_stream) << name;
    if (name == "overlap_copy_compute") {
      for (const auto& op : r.trace->ops) {
        if (op.name == "copy to host") EXPECT_NE(op.track.find("copy D2H stream"), std::string::npos);
      }
    }
  }
}

// The device scenarios on GPU 0 (and GPU 1 where there is one): same results
// bit for bit, each op on the stream its kind belongs on, and an ideal
// speedup from the sync run's pushes.
TEST(Scenarios, DeviceScenariosOnCuda) {
  if (depengine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine (or a build without CUDA)";
  init_kernels();
  Config config = tiny();
  config.device = "cuda";
  for (const auto& scenario : all_scenarios()) {
    const std::string name = scenario->name();
    if (!scenario->runs_on_device(config)) continue;
    const depengine::TraceOptions trace{.label = name};
    const ScenarioResult r = run_scenario(*scenario, config, &trace);
    EXPECT_TRUE(r.results_equal) << name;
    EXPECT_TRUE(std::isfinite(r.ideal_speedup)) << name;
    EXPECT_GT(r.ideal_speedup, 0) << name;
    if (!depengine::Profiler::available()) continue;  // no trace without the profiler's hooks
    ASSERT_TRUE(r.trace.has_value());
    bool on_gpu = false;
    for (const auto& op : r.trace->ops) {
      on_gpu = on_gpu || op.track.rfind("cuda:0 compute stream", 0) == 0;
      if (op.name == "copy_to" && op.device == "cuda:0") {
        // Device-placed copies: down on the D2H stream, up on the H2D one.
        const bool on_copy_stream = op.track.find("copy D2H stream") != std::string::npos ||
                                    op.track.find("copy H2D stream") != std::string::npos;
        EXPECT_TRUE(on_copy_stream) << name << ": " << op.track;
      }
    }
    EXPECT_TRUE(on_gpu) << name;
    if (name == "overlap_copy_compute" || name == "data_loading") {
      const char* stream = name == "overlap_copy_compute" ? "cuda:0 copy D2H stream" : "cuda:0 copy H2D stream";
      int copies = 0;
      for (const auto& op : r.trace->ops) copies += op.name == "copy_to" && op.track.rfind(stream, 0) == 0;
      EXPECT_GE(copies, 12) << name << " on " << stream;
    }
  }
}

// What --device cannot move says so (the table lists it; the JSON says "cpu").
TEST(Scenarios, CpuOnlyScenariosStayOnTheCpu) {
  Config cuda = tiny(), emulated = tiny(), cpu = tiny();
  cuda.device = "cuda";
  emulated.device = "emulated";
  for (const auto& scenario : all_scenarios()) {
    const std::string name = scenario->name();
    // hybridize measures the engine's cost per op, on the host.
    const bool measures_the_host = name == "roofline" || name == "frontend_backend" || name == "hybridize";
    // data_parallel's communicator takes host memory only; gradient_sync's
    // devices are emulated whatever --device says.
    const bool own_devices = name == "gradient_sync";
    EXPECT_EQ(scenario->runs_on_device(cuda), !measures_the_host && name != "data_parallel" && !own_devices) << name;
    EXPECT_EQ(scenario->runs_on_device(emulated), !measures_the_host && name != "training_step" && !own_devices)
        << name;
    EXPECT_FALSE(scenario->runs_on_device(cpu)) << name;
  }
}

TEST(Scenarios, RooflineClassifiesEveryProbe) {
  init_kernels();
  for (const auto& scenario : all_scenarios()) {
    if (scenario->name() != "roofline") continue;
    const Outcome o = scenario->run(Mode::sync, tiny(), nullptr);
    EXPECT_GT(o.metrics.at("peak_gflops"), 0);
    EXPECT_GT(o.metrics.at("bandwidth_gbs"), 0);
    const double balance = o.metrics.at("balance_flop_per_byte");
    ASSERT_TRUE(o.details.is_array());
    ASSERT_FALSE(o.details.empty());
    for (const auto& op : o.details) {
      const double intensity = op.at("intensity");
      EXPECT_DOUBLE_EQ(intensity, op.at("flops").get<double>() / op.at("bytes").get<double>());
      EXPECT_EQ(op.at("bound"), intensity < balance ? "bandwidth" : "compute") << op.at("op");
    }
  }
}

// Every strategy leaves on every device the sum over all ranks, in both
// modes: each strategy's checksum (the sum of every element it left on every
// device) against one from a host reference built here, from the
// scenario's documented layer sizes and gradient values.
TEST(Scenarios, GradientSyncSumsTheSameGradientsByEveryStrategy) {
  namespace gs = gradient_sync;
  constexpr int kDevices = 4;
  for (const auto& scenario : all_scenarios()) {
    if (scenario->name() != "gradient_sync") continue;
    double expected = 0;
    const std::vector<double> layers = gs::layer_counts(tiny().size);
    for (std::size_t l = 0; l < layers.size(); ++l) {
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(layers[l]); ++i) {
        double sum = 0;
        for (int rank = 0; rank < kDevices; ++rank) sum += gs::gradient_value(rank, static_cast<int>(l), i);
        expected += kDevices * sum;  // every device holds the sum
      }
    }
    ASSERT_NE(expected, 0) << "a reference that cannot tell a sum from zeros";
    for (Mode mode : {Mode::sync, Mode::async}) {
      const Outcome o = scenario->run(mode, tiny(), nullptr);
      EXPECT_EQ(o.metrics.at("processes"), 1);
      EXPECT_EQ(o.metrics.at("devices_per_process"), kDevices);
      EXPECT_EQ(o.metrics.at("layers"), static_cast<double>(layers.size()));
      for (const std::string& s : gs::strategies()) {
        const bool in_one_process = s == "one_device" || s == "ring" || s == "kvstore_local";
        ASSERT_EQ(o.metrics.contains(gs::metric(s, "checksum")), in_one_process) << s;
        if (!in_one_process) continue;
        EXPECT_EQ(o.metrics.at(gs::metric(s, "checksum")), expected) << s << " in " << to_string(mode);
        EXPECT_GT(o.metrics.at(gs::metric(s, "seconds")), 0) << s;
        EXPECT_GT(o.metrics.at(gs::metric(s, "ideal_s")), 0) << s;
        EXPECT_GE(o.metrics.at(gs::metric(s, "shared_memory_s")), o.metrics.at(gs::metric(s, "ideal_s"))) << s;
      }
      // The chapter's link bytes, in units of one device's gradients (N):
      // one device carries 2 (k - 1) N, a ring link 2 (k - 1) / k N.
      const double n_mib = o.metrics.at("gradient_mib");
      EXPECT_DOUBLE_EQ(o.metrics.at(gs::metric("one_device", "bottleneck_mib")), 2.0 * (kDevices - 1) * n_mib);
      EXPECT_DOUBLE_EQ(o.metrics.at(gs::metric("ring", "bottleneck_mib")), 2.0 * (kDevices - 1) / kDevices * n_mib);
      EXPECT_DOUBLE_EQ(o.metrics.at(gs::metric("kvstore_local", "bottleneck_mib")), (kDevices + 1.0) * n_mib);
    }
    return;
  }
  FAIL() << "no gradient_sync scenario";
}

// The ideal speedup follows the engine's ordering rules.
class IdealSpeedup : public ::testing::Test {
 protected:
  depengine::Engine engine{{.kind = depengine::EngineKind::Naive, .read_environment = false}};
  depengine::Var a = engine.new_var("a"), b = engine.new_var("b");
};

TEST_F(IdealSpeedup, ADependentChainCannotGoFaster) {
  OpTimes t;
  *t.add({}, {a}) = 1;
  *t.add({a}, {b}) = 2;
  EXPECT_DOUBLE_EQ(t.critical_path(), 3);
  EXPECT_DOUBLE_EQ(t.ideal_speedup(8), 1);
}

TEST_F(IdealSpeedup, IndependentHalvesAreBoundByTheLongerOne) {
  OpTimes t;
  *t.add({}, {a}) = 3;
  *t.add({}, {b}) = 1;
  EXPECT_DOUBLE_EQ(t.ideal_speedup(2), 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(t.ideal_speedup(1), 1);  // one worker: no gain
}

TEST_F(IdealSpeedup, ReadersRunTogetherAndHoldTheNextWrite) {
  OpTimes t;
  *t.add({a}, {}) = 2;
  *t.add({a}, {}) = 2;
  *t.add({}, {a}) = 1;  // must wait for both reads
  EXPECT_DOUBLE_EQ(t.critical_path(), 3);
  EXPECT_DOUBLE_EQ(t.work(), 5);
}

TEST_F(IdealSpeedup, AStreamRunsOneOpAtATime) {
  OpTimes t;
  *t.add({}, {a}, "copy stream") = 2;
  *t.add({}, {b}, "copy stream") = 2;
  EXPECT_DOUBLE_EQ(t.ideal_speedup(4), 1);
}
