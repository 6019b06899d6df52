// A device an embedding framework adds: operations run on the framework's own
// thread pool (examples/embedding_thread_pool_device.h), and keep the
// engine's ordering, error and shutdown rules across devices.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>

#include <depengine/engine.h>
#include <depengine/executor.h>

#include "examples/embedding_thread_pool_device.h"

namespace {

using depengine::Device;
using depengine::DeviceKind;
using depengine::Engine;
using depengine::RunContext;
using depengine::Var;

constexpr Device kPoolDevice = Device::custom(0);

TEST(EmbeddingCustomDevice, OperationsRunOnThePoolThreads) {
  FrameworkThreadPool pool(2);
  Engine engine({.cpu_threads = 2});
  engine.add_device(kPoolDevice, std::make_unique<ThreadPoolExecutor>(pool));
  ASSERT_TRUE(engine.has_device(kPoolDevice));

  std::atomic<int> on_pool{0}, elsewhere{0};
  Device seen_device = Device::cpu();
  Var v = engine.new_var("v");
  for (int i = 0; i < 20; ++i) {
    engine.push(
        [&](RunContext& ctx) {
          (pool.on_pool_thread() ? on_pool : elsewhere)++;
          seen_device = ctx.device;
        },
        {}, {v}, {.name = "on_pool", .device = kPoolDevice});
  }
  engine.wait_to_read(v);
  EXPECT_EQ(on_pool.load(), 20);
  EXPECT_EQ(elsewhere.load(), 0);
  EXPECT_EQ(seen_device, kPoolDevice);
}

TEST(EmbeddingCustomDevice, DependenciesHoldAcrossDevices) {
  FrameworkThreadPool pool(2);
  Engine engine({.cpu_threads = 2});
  engine.add_device(kPoolDevice, std::make_unique<ThreadPoolExecutor>(pool));

  // A chain that alternates between the engine's CPU workers and the pool;
  // each step reads what the previous one wrote.
  long value = 0;
  Var v = engine.new_var("value");
  for (int i = 0; i < 200; ++i) {
    const Device device = i % 2 == 0 ? kPoolDevice : Device::cpu();
    engine.push([&value, i](RunContext&) { value = value * 3 % 1000003 + i; }, {}, {v}, {.device = device});
  }
  long expected = 0;
  for (int i = 0; i < 200; ++i) expected = expected * 3 % 1000003 + i;
  engine.wait_to_read(v);
  EXPECT_EQ(value, expected);
}

TEST(EmbeddingCustomDevice, ErrorsPropagateFromThePool) {
  FrameworkThreadPool pool(1);
  Engine engine({.cpu_threads = 1});
  engine.add_device(kPoolDevice, std::make_unique<ThreadPoolExecutor>(pool));
  Var in = engine.new_var("in"), out = engine.new_var("out");
  bool consumer_ran = false;
  engine.push([](RunContext&) { throw std::runtime_error("pool op failed"); }, {}, {in}, {.device = kPoolDevice});
  engine.push([&](RunContext&) { consumer_ran = true; }, {in}, {out});
  try {
    engine.wait_to_read(out);
    FAIL() << "expected the pool operation's error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "pool op failed");
  }
  EXPECT_FALSE(consumer_ran);
}

TEST(EmbeddingCustomDevice, AsyncOperationOnThePoolCompletesThroughItsCompletion) {
  FrameworkThreadPool pool(1), elsewhere(1);
  Engine engine({.cpu_threads = 1});
  engine.add_device(kPoolDevice, std::make_unique<ThreadPoolExecutor>(pool));
  Var v = engine.new_var();
  int value = 0;
  engine.push_async(
      [&](RunContext&, depengine::Completion done) {
        // std::function jobs must be copyable; the Completion is not.
        elsewhere.post([&value, done = std::make_shared<depengine::Completion>(std::move(done))] {
          value = 7;
          (*done)();
        });
      },
      {}, {v}, {.device = kPoolDevice});
  engine.wait_to_read(v);
  EXPECT_EQ(value, 7);
}

/// Counts what the engine asks of it, to check the shutdown contract.
class CountingExecutor : public ThreadPoolExecutor {
 public:
  CountingExecutor(FrameworkThreadPool& pool, std::atomic<int>& completed, int& completed_at_shutdown)
      : ThreadPoolExecutor(pool), completed_(completed), completed_at_shutdown_(completed_at_shutdown) {}
  void shutdown() override { completed_at_shutdown_ = completed_.load(); }

 private:
  std::atomic<int>& completed_;
  int& completed_at_shutdown_;
};

TEST(EmbeddingCustomDevice, EngineShutsTheDeviceDownAfterEveryOperation) {
  FrameworkThreadPool pool(2);
  std::atomic<int> completed{0};
  int completed_at_shutdown = -1;
  {
    Engine engine({.cpu_threads = 1});
    engine.add_device(kPoolDevice, std::make_unique<CountingExecutor>(pool, completed, completed_at_shutdown));
    for (int i = 0; i < 50; ++i) {
      Var v = engine.new_var();
      engine.push([&](RunContext&) { completed++; }, {}, {v}, {.device = kPoolDevice});
    }
  }  // ~Engine: waits for the operations, then shuts the device down
  EXPECT_EQ(completed_at_shutdown, 50);
}

TEST(EmbeddingCustomDevice, FactoryCreatesDevicesOnFirstUse) {
  FrameworkThreadPool pool(1);
  std::atomic<int> created{0};
  // Index 1 exists, others do not (a factory returns null for those).
  depengine::register_device_factory(DeviceKind::custom, [&](Device device) -> std::unique_ptr<depengine::Executor> {
    if (device.index != 1) return nullptr;
    created++;
    return std::make_unique<ThreadPoolExecutor>(pool);
  });
  {
    Engine engine({.cpu_threads = 1});
    EXPECT_FALSE(engine.has_device(Device::custom(1)));
    Var v = engine.new_var();
    bool ran_on_pool = false;
    engine.push([&](RunContext&) { ran_on_pool = pool.on_pool_thread(); }, {}, {v}, {.device = Device::custom(1)});
    engine.wait_to_read(v);
    EXPECT_TRUE(ran_on_pool);
    EXPECT_TRUE(engine.has_device(Device::custom(1)));
    EXPECT_THROW(engine.push([](RunContext&) {}, {}, {v}, {.device = Device::custom(2)}), std::invalid_argument);
  }
  EXPECT_EQ(created.load(), 1);
  // Later engines must not call this test's factory, which refers to locals.
  depengine::register_device_factory(DeviceKind::custom, nullptr);
}

}  // namespace
