// data_loading: an input pipeline. Each batch is loaded (decoded from a
// seed) and augmented on the CPU, then a training-like step consumes it.
// The step runs on the device (emulated:0 with --device emulated, else the
// CPU). Two batch buffers: the engine loads batch k+1 while step k computes, and
// holds the load of batch k+2 until step k has read its buffer. Sync loads,
// then computes, then loads...

#include <cmath>

#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/scenarios.h"

namespace depbench {
namespace {

constexpr int kFeatures = 256;
constexpr int kHidden = 256;

// Decode and augment one batch: gamma-decode the raw values, standardise
// each sample, mirror every other one.
void load_batch(Floats& batch, int rows, std::uint64_t seed) {
  fill_uniform(batch, seed);
  for (float& v : batch) v = std::pow(v, 2.2f);
  for (int r = 0; r < rows; ++r) {
    float* row = batch.data() + std::size_t(r) * kFeatures;
    double mean = 0, sq = 0;
    for (int i = 0; i < kFeatures; ++i) mean += row[i];
    mean /= kFeatures;
    for (int i = 0; i < kFeatures; ++i) sq += (row[i] - mean) * (row[i] - mean);
    const float inv_std = static_cast<float>(1.0 / std::sqrt(sq / kFeatures + 1e-6));
    for (int i = 0; i < kFeatures; ++i) row[i] = static_cast<float>(row[i] - mean) * inv_std;
    if ((seed + r) % 2 == 0) std::reverse(row, row + kFeatures);
  }
}

class DataLoading final : public Scenario {
 public:
  std::string name() const override { return "data_loading"; }
  std::string description() const override {
    return "load+augment batch k+1 on a CPU worker while batch k is computed; sync: load, compute, load, ...";
  }
  std::string ideal_formula() const override { return "(loads + steps) / max(critical path, (loads + steps) / workers)"; }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const int rows = scaled(512, config.size, 16);
    const int batches = 12;
    Floats buffers[2] = {Floats(std::size_t(rows) * kFeatures), Floats(std::size_t(rows) * kFeatures)};
    Floats weights = uniform(std::size_t(kFeatures) * kHidden, 7, -0.05f, 0.05f);
    Floats hidden(std::size_t(rows) * kHidden);
    OpTimes times;
    Outcome out;
    {
      RunEngine engine(engine_kind(mode), trace, emulated_devices(config, 1));
      const depengine::Device device = work_device(config, 0);
      depengine::Var slot_var[2] = {engine->new_var("batch buffer 0"), engine->new_var("batch buffer 1")};
      depengine::Var weights_var = engine->new_var("weights");
      Stopwatch watch;
      for (int b = 0; b < batches; ++b) {
        Floats& batch = buffers[b % 2];
        depengine::Var batch_var = slot_var[b % 2];
        double* load_slot = mode == Mode::sync ? times.add({}, {batch_var}) : nullptr;
        engine->push([&batch, rows, b, load_slot](depengine::RunContext&) {
                       timed(load_slot, [&] { load_batch(batch, rows, 1000 + b); });
                     },
                     {}, {batch_var}, {.name = "load+augment"});
        double* step_slot =
            mode == Mode::sync ? times.add({batch_var}, {weights_var}, resource_of(device, {})) : nullptr;
        engine->push([&batch, &weights, &hidden, rows, step_slot](depengine::RunContext&) {
                       timed(step_slot, [&] {
                         // h = relu(x W); W -= lr/rows * x^T h: a Hebbian-like update
                         // with the cost of a forward and a backward product.
                         gemm(batch.data(), weights.data(), hidden.data(), rows, kHidden, kFeatures);
                         relu(hidden);
                         gemm(batch.data(), hidden.data(), weights.data(), kFeatures, kHidden, rows,
                              -1e-3f / static_cast<float>(rows), 1.0f, /*transpose_a=*/true);
                       });
                     },
                     {batch_var}, {weights_var}, {.name = "train step", .device = device});
      }
      engine->wait_all();
      out.seconds = watch.seconds();
    }
    out.digest = digest(weights);
    if (mode == Mode::sync) out.ideal_speedup = times.ideal_speedup(cpu_workers());
    out.metrics["batches"] = batches;
    out.metrics["batch_rows"] = rows;
    return out;
  }
};

}  // namespace

std::unique_ptr<Scenario> make_data_loading() { return std::make_unique<DataLoading>(); }

}  // namespace depbench
