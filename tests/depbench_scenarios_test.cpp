// depbench's scenarios and its ideal-speedup arithmetic, run in-process at a
// tiny size. Behaviour only: equal results, consistent numbers, never timing.

#include <gtest/gtest.h>

#include <cmath>

#include <depengine/engine.h>
#include <depengine/profiler.h>

#include "bench/depbench/harness.h"
#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"

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
      // DEPENGINE_PROFILER_HOOKS=OFF: no trace, and training_step cannot
      // measure its ideal speedup.
      EXPECT_FALSE(r.trace.has_value());
      if (GetParam() == "training_step") {
        EXPECT_TRUE(std::isnan(r.ideal_speedup));
      } else {
        EXPECT_GT(r.ideal_speedup, 0);
      }
      return;
    }
    EXPECT_GT(r.ideal_speedup, 0);
    ASSERT_TRUE(r.trace.has_value());
    EXPECT_FALSE(r.trace->ops.empty());
    return;
  }
  FAIL() << "no scenario named " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(All, Scenarios,
                         ::testing::Values("roofline", "frontend_backend", "auto_parallel", "overlap_copy_compute",
                                           "data_loading", "training_step"));

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
