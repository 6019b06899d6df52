// Placing operations on devices the engine does not have.

#include <gtest/gtest.h>

#include <depengine/cuda_memory.h>
#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <stdexcept>
#include <string>

using namespace depengine;

namespace {

void expect_rejected(Engine& engine, Device device) {
  Var v = engine.new_var("v");
  try {
    engine.push([](RunContext&) {}, {}, {v}, {.name = "misplaced", .device = device});
    ADD_FAILURE() << "push on " << device.to_string() << " was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(device.to_string()), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(engine.wait_all());  // nothing was enqueued
}

TEST(DevicePlacement, EmulatedDeviceNotAdded) {
  Engine engine;
  add_emulated_device(engine, 0);
  expect_rejected(engine, Device::emulated(1));
  expect_rejected(engine, Device::emulated(1000));
}

TEST(DevicePlacement, CudaDeviceBeyondTheMachine) {
  Engine engine;
  expect_rejected(engine, Device::cuda(cuda_device_count()));
}

TEST(DevicePlacement, GpuMemoryOfMissingDevice) {
  EXPECT_ANY_THROW(cuda_alloc(cuda_device_count(), 64));
}

}  // namespace
