// The emulated device: results, stream placement, early launch, overlap,
// errors and deletion safety.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <chrono>
#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/device_test_util.h"

using namespace depengine;
using depengine::testing::Gate;

namespace {

constexpr Device kGpu = Device::emulated(0);

const EmulatedStream& stream_of(const RunContext& ctx) { return *static_cast<EmulatedStream*>(ctx.stream); }

// Each of `vars`, waited for (to write, or to read), rethrows `message`.
void expect_waits_rethrow(Engine& engine, std::initializer_list<Var> vars, bool to_write, const char* message) {
  const char* call = to_write ? "wait_to_write" : "wait_to_read";
  for (Var v : vars) {
    try {
      to_write ? engine.wait_to_write(v) : engine.wait_to_read(v);
      ADD_FAILURE() << call << "(" << engine.var_name(v) << ") did not rethrow";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), message) << call << "(" << engine.var_name(v) << ")";
    }
  }
}

// Upload, scale on the device, download: the results and where each op ran.
void run_pipeline(Engine& engine) {
  add_emulated_device(engine, 0);
  std::vector<float> host(256, 1.5f), dev, out;
  StreamRole roles[3];
  Var h = engine.new_var("host"), d = engine.new_var("dev"), o = engine.new_var("out");
  engine.push(
      [&](RunContext& ctx) {
        roles[0] = stream_of(ctx).role();
        dev = host;
      },
      {h}, {d}, {.name = "upload", .device = kGpu, .property = OpProperty::CopyToDevice});
  engine.push(
      [&](RunContext& ctx) {
        roles[1] = stream_of(ctx).role();
        EXPECT_EQ(ctx.device, kGpu);
        EXPECT_EQ(ctx.stream_index, stream_of(ctx).index());
        for (float& x : dev) x *= 2;
      },
      {}, {d}, {.name = "scale", .device = kGpu});
  engine.push(
      [&](RunContext& ctx) {
        roles[2] = stream_of(ctx).role();
        out = dev;
      },
      {d}, {o}, {.name = "download", .device = kGpu, .property = OpProperty::CopyFromDevice});
  engine.wait_to_read(o);
  ASSERT_EQ(out.size(), host.size());
  for (float x : out) EXPECT_EQ(x, 3.0f);
  EXPECT_EQ(roles[0], StreamRole::copy_to_device);
  EXPECT_EQ(roles[1], StreamRole::compute);
  EXPECT_EQ(roles[2], StreamRole::copy_from_device);
}

TEST(EmulatedDevice, PipelineComputesOnItsStreams) {
  Engine engine;
  run_pipeline(engine);
}

TEST(EmulatedDevice, NaiveEngineRunsDeviceOps) {
  Engine engine({.kind = EngineKind::Naive});
  run_pipeline(engine);
}

TEST(EmulatedDevice, SuccessorLaunchesBeforePredecessorCompletes) {
  std::mutex mutex;
  std::condition_variable launched_cv;
  std::vector<std::string> launched;
  Engine engine;
  add_emulated_device(engine, 0,
                      {.latency = std::chrono::microseconds(200),
                       .on_launch = [&](std::string_view name, const EmulatedStream&) {
                         {
                           std::lock_guard lock(mutex);
                           launched.emplace_back(name);
                         }
                         launched_cv.notify_all();
                       }});
  Gate gate;
  std::atomic<bool> producer_done{false};
  int x = 0, y = 0;
  Var vx = engine.new_var("x"), vy = engine.new_var("y");
  engine.push(
      [&](RunContext&) {
        ASSERT_TRUE(gate.wait());
        x = 42;
        producer_done = true;
      },
      {}, {vx}, {.name = "produce", .device = kGpu});
  // On another stream (the copy stream): ordered by an event, not by the host.
  engine.push([&](RunContext&) { y = x; }, {vx}, {vy},
              {.name = "consume", .device = kGpu, .property = OpProperty::CopyFromDevice});
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(launched_cv.wait_for(lock, depengine::testing::kGiveUp, [&] { return launched.size() == 2; }));
    EXPECT_EQ(launched[1], "consume");
  }
  EXPECT_FALSE(producer_done) << "the consumer was launched only after its producer completed";
  gate.open();
  engine.wait_to_read(vy);
  EXPECT_EQ(y, 42);
}

TEST(EmulatedDevice, CopyAndComputeOverlap) {
  using Clock = std::chrono::steady_clock;
  Engine engine;
  add_emulated_device(engine, 0);
  // Each op waits for the other to start: they meet only if the device runs
  // them at the same time, on its copy and compute streams.
  std::atomic<int> started{0};
  auto meet = [&] {
    ++started;
    const auto give_up = Clock::now() + depengine::testing::kGiveUp;
    while (started.load() < 2 && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::microseconds(100));
    return started.load() == 2;
  };
  Clock::time_point copy_start, copy_end, compute_start, compute_end;
  bool copy_met = false, compute_met = false;
  Var a = engine.new_var("a"), b = engine.new_var("b");
  engine.push(
      [&](RunContext&) {
        copy_start = Clock::now();
        copy_met = meet();
        copy_end = Clock::now();
      },
      {}, {a}, {.name = "copy", .device = kGpu, .property = OpProperty::CopyToDevice});
  engine.push(
      [&](RunContext&) {
        compute_start = Clock::now();
        compute_met = meet();
        compute_end = Clock::now();
      },
      {}, {b}, {.name = "compute", .device = kGpu});
  engine.wait_all();
  EXPECT_TRUE(copy_met);
  EXPECT_TRUE(compute_met);
  EXPECT_LT(copy_start, compute_end);
  EXPECT_LT(compute_start, copy_end);
}

TEST(EmulatedDevice, FailureSkipsLaterOpsAndEngineRecovers) {
  Engine engine;
  add_emulated_device(engine, 0, {.latency = std::chrono::microseconds(500)});
  std::atomic<int> ran_after_failure{0};
  int x = 1, y = 0;
  Var vx = engine.new_var("x"), vy = engine.new_var("y"), vz = engine.new_var("z");
  engine.push([](RunContext&) { throw std::runtime_error("kernel exploded"); }, {}, {vx},
              {.name = "fails", .device = kGpu});
  // Launched while the failing op is still in flight (latency): skipped on
  // the device, on another stream and on the same one; then on the CPU.
  engine.push([&](RunContext&) { ++ran_after_failure; }, {vx}, {vy},
              {.device = kGpu, .property = OpProperty::CopyFromDevice});
  engine.push([&](RunContext&) { ++ran_after_failure; }, {vy}, {vz}, {.device = kGpu});
  Var vc = engine.new_var("cpu");
  engine.push([&](RunContext&) { ++ran_after_failure; }, {vz}, {vc});
  // An independent op is unaffected.
  Var vok = engine.new_var("ok");
  engine.push([&](RunContext&) { y = 7; }, {}, {vok}, {.device = kGpu});

  // wait_to_write also waits for the early-launched readers, which must
  // have been skipped (WaitToReadDoesNotHideAFailureFromLaunchedReaders
  // covers wait_to_read, which does not wait for them).
  expect_waits_rethrow(engine, {vx, vy, vz, vc}, /*to_write=*/true, "kernel exploded");
  EXPECT_EQ(ran_after_failure.load(), 0);
  engine.wait_to_read(vok);
  EXPECT_EQ(y, 7);

  // The engine and the device keep working; the reported error is gone.
  engine.push([&](RunContext&) { x = 5; }, {}, {vx}, {.device = kGpu});
  engine.wait_to_read(vx);
  EXPECT_EQ(x, 5);
  EXPECT_NO_THROW(engine.wait_all());
}

TEST(EmulatedDevice, WaitToReadDoesNotHideAFailureFromLaunchedReaders) {
  // A reader launched early behind a failing write checks its inputs only
  // once that write completed; by then a wait_to_read of the variable,
  // granted by the same completion, has reported and cleared the failure.
  // The reader must be skipped all the same, as in naive mode.
  Engine engine;
  add_emulated_device(engine, 0);
  Gate gate;
  std::atomic<int> ran_after_failure{0};
  Var vx = engine.new_var("x"), vy = engine.new_var("y"), vz = engine.new_var("z");
  engine.push(
      [&](RunContext&) {
        ASSERT_TRUE(gate.wait());
        throw std::runtime_error("kernel exploded");
      },
      {}, {vx}, {.name = "fails", .device = kGpu});
  // Launched at once, waiting for the failing op: on its stream and on another.
  engine.push([&](RunContext&) { ++ran_after_failure; }, {vx}, {vy}, {.device = kGpu});
  engine.push([&](RunContext&) { ++ran_after_failure; }, {vx}, {vz},
              {.device = kGpu, .property = OpProperty::CopyFromDevice});
  // Let the failing op finish once this thread is blocked in wait_to_read
  // (opening the gate too early only makes the test weaker, never fail).
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.open();
  });
  std::string reported;
  try {
    engine.wait_to_read(vx);
  } catch (const std::runtime_error& e) {
    reported = e.what();
  }
  opener.join();
  EXPECT_EQ(reported, "kernel exploded");
  expect_waits_rethrow(engine, {vy, vz}, /*to_write=*/false, "kernel exploded");
  EXPECT_EQ(ran_after_failure.load(), 0);
  EXPECT_NO_THROW(engine.wait_all());
}

TEST(EmulatedDevice, DeletionWaitsForWorkOnEveryStream) {
  Engine engine;
  add_emulated_device(engine, 0, {.compute_streams = 3});
  constexpr int kOps = 24;
  auto buffer = std::make_unique<std::vector<int>>(kOps, 0);
  std::atomic<bool> released{false};
  std::atomic<int> finished{0}, touched_after_release{0};
  int finished_at_release = -1;
  Var v = engine.new_var("buffer");
  const OpProperty properties[] = {OpProperty::Normal, OpProperty::CopyToDevice, OpProperty::CopyFromDevice,
                                   OpProperty::DeviceToDevice};
  const std::vector<Var> none, just_v{v};
  for (int i = 0; i < kOps; ++i) {
    // Readers of one version run on several streams at once.
    const bool write = i % 4 == 0;
    engine.push(
        [&, i, write](RunContext&) {
          std::this_thread::sleep_for(std::chrono::microseconds(300));
          if (released) ++touched_after_release;
          if (write) (*buffer)[i] = i;
          ++finished;
        },
        write ? none : just_v, write ? just_v : none,
        {.device = kGpu, .property = properties[i % 4]});
  }
  engine.delete_var(v, [&] {
    finished_at_release = finished.load();
    buffer.reset();
    released = true;
  });
  engine.wait_all();
  EXPECT_TRUE(released);
  EXPECT_EQ(finished_at_release, kOps);
  EXPECT_EQ(touched_after_release.load(), 0);
}

TEST(EmulatedDevice, AsyncOpCompletesFromItsCallback) {
  Engine engine;
  add_emulated_device(engine, 0);
  int x = 0, y = 0;
  std::mutex mutex;
  std::condition_variable handed_over;
  std::optional<Completion> pending;
  Var vx = engine.new_var("x"), vy = engine.new_var("y");
  engine.push([&](RunContext&) { x = 1; }, {}, {vx}, {.device = kGpu});
  engine.push_async(
      [&](RunContext& ctx, Completion done) {
        EXPECT_EQ(stream_of(ctx).role(), StreamRole::compute);
        // Notified under the lock: once the main thread sees `pending`, it
        // may complete the op and return, destroying the condition variable
        // while this function is still running.
        std::lock_guard lock(mutex);
        pending = std::move(done);
        handed_over.notify_all();
      },
      {}, {vx}, {.device = kGpu});
  // Must not run before the async op completes: it gets no early launch.
  engine.push([&](RunContext&) { y = x; }, {vx}, {vy}, {.device = kGpu, .property = OpProperty::CopyFromDevice});
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(handed_over.wait_for(lock, depengine::testing::kGiveUp, [&] { return pending.has_value(); }));
  }
  x += 10;  // the async op's work, done here, completed from this thread
  (*pending)();
  engine.wait_to_read(vy);
  EXPECT_EQ(y, 11);
}

TEST(EmulatedDevice, OpsPushedFromDeviceOps) {
  Engine engine;
  add_emulated_device(engine, 0);
  std::atomic<int> sum{0};
  Var v = engine.new_var("v");
  engine.push(
      [&](RunContext&) {
        for (int i = 1; i <= 10; ++i) engine.push([&, i](RunContext&) { sum += i; }, {}, {v}, {.device = kGpu});
      },
      {}, {}, {.device = kGpu});
  engine.wait_all();
  EXPECT_EQ(sum.load(), 55);
}

TEST(EmulatedDevice, LongChainBehindCpuOpLaunchesWithoutDeepRecursion) {
  Engine engine;
  add_emulated_device(engine, 0);
  Gate gate;
  long counter = 0;
  Var v = engine.new_var("counter");
  engine.push([&](RunContext&) { ASSERT_TRUE(gate.wait()); }, {}, {v});
  // All become launchable at once when the CPU op completes.
  constexpr int kChain = 20000;
  for (int i = 0; i < kChain; ++i) engine.push([&](RunContext&) { ++counter; }, {}, {v}, {.device = kGpu});
  gate.open();
  engine.wait_to_read(v);
  EXPECT_EQ(counter, kChain);
}

TEST(EmulatedDevice, RejectsBadSetup) {
  Engine engine;
  EXPECT_THROW(add_emulated_device(engine, 0, {.compute_streams = 0}), std::invalid_argument);
  EXPECT_THROW(add_emulated_device(engine, 0, {.latency = std::chrono::microseconds(-1)}), std::invalid_argument);
  EXPECT_THROW(add_emulated_device(engine, -1), std::invalid_argument);
  add_emulated_device(engine, 0);
  EXPECT_THROW(add_emulated_device(engine, 0), std::invalid_argument);
  EXPECT_TRUE(engine.has_device(kGpu));
}

}  // namespace
