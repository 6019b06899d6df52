// A framework that already owns a thread pool makes it a depengine device:
// operations placed on Device::custom(0) run on the framework's threads, and
// the engine still orders them with operations on its own CPU workers.
// See examples/embedding_thread_pool_device.h and docs/embedding.md.

#include <cstdio>
#include <memory>
#include <vector>

#include <depengine/engine.h>

#include "embedding_thread_pool_device.h"

int main() {
  FrameworkThreadPool pool(2);  // the framework's; it outlives the engine
  depengine::Engine engine;
  const depengine::Device framework_device = depengine::Device::custom(0);
  engine.add_device(framework_device, std::make_unique<ThreadPoolExecutor>(pool));

  std::vector<double> samples(1000);
  double mean = 0;
  bool decoded_on_pool = false;
  depengine::Var vsamples = engine.new_var("samples"), vmean = engine.new_var("mean");

  // Decoding belongs to the framework: run it on the framework's threads.
  engine.push(
      [&](depengine::RunContext&) {
        for (std::size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<double>(i);
        decoded_on_pool = pool.on_pool_thread();
      },
      {}, {vsamples}, {.name = "decode", .device = framework_device});
  // Statistics on the engine's own CPU workers, after the decode.
  engine.push(
      [&](depengine::RunContext&) {
        double sum = 0;
        for (double x : samples) sum += x;
        mean = sum / static_cast<double>(samples.size());
      },
      {vsamples}, {vmean}, {.name = "mean"});

  engine.wait_to_read(vmean);
  std::printf("mean = %.1f, decoded on the framework's pool: %s\n", mean, decoded_on_pool ? "yes" : "no");
  return mean == 499.5 && decoded_on_pool ? 0 : 1;
}
