// Upload, compute and download on the emulated device: the copies go to the
// copy streams, the kernels to the compute streams, and batches overlap.
// Prints the results and where each step ran.

#include <cstdio>
#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <mutex>
#include <vector>

int main() {
  using namespace depengine;
  Engine engine;
  add_emulated_device(engine, 0, {.compute_streams = 2});
  const Device gpu = Device::emulated(0);

  constexpr int kBatches = 4;
  std::vector<std::vector<float>> host(kBatches, std::vector<float>(1000)), dev(kBatches);
  std::vector<Var> host_vars, dev_vars;
  std::mutex print;
  auto where = [&](const char* step, int batch, const RunContext& ctx) {
    static const char* roles[] = {"compute", "copy to device", "copy from device", "device to device"};
    std::lock_guard lock(print);
    std::printf("batch %d %-8s on stream %d (%s)\n", batch, step, ctx.stream_index,
                roles[static_cast<int>(static_cast<EmulatedStream*>(ctx.stream)->role())]);
  };
  for (int b = 0; b < kBatches; ++b) {
    for (float& x : host[b]) x = static_cast<float>(b);
    host_vars.push_back(engine.new_var("host"));
    dev_vars.push_back(engine.new_var("dev"));
    engine.push([&, b](RunContext& ctx) { where("upload", b, ctx); dev[b] = host[b]; },
                {host_vars[b]}, {dev_vars[b]}, {.device = gpu, .property = OpProperty::CopyToDevice});
    engine.push([&, b](RunContext& ctx) { where("compute", b, ctx); for (float& x : dev[b]) x = x * 2 + 1; },
                {}, {dev_vars[b]}, {.device = gpu});
    engine.push([&, b](RunContext& ctx) { where("download", b, ctx); host[b] = dev[b]; },
                {dev_vars[b]}, {host_vars[b]}, {.device = gpu, .property = OpProperty::CopyFromDevice});
  }
  int wrong = 0;
  for (int b = 0; b < kBatches; ++b) {
    engine.wait_to_read(host_vars[b]);
    for (float x : host[b]) wrong += x != 2.0f * b + 1;
  }
  std::printf("%s\n", wrong == 0 ? "all results correct" : "WRONG RESULTS");
  return wrong == 0 ? 0 : 1;
}
