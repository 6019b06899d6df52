// data_loading: an input pipeline. Each batch is loaded (decoded from a
// seed) and augmented on the CPU, then a training-like step consumes it.
// The step runs on the device (emulated:0 with --device emulated; cuda:0
// with --device cuda, after an upload by Tensor::copy_to, which stages the
// batch in pinned host memory so that the copy overlaps the GPU's work; else
// the CPU). Two batch buffers: the engine loads batch k+1 while step k
// computes, and holds the load of batch k+2 until step k (or, on a GPU, the
// upload of batch k) has read its buffer. Sync loads, then computes, then
// loads...

#include <cmath>
#include <span>

#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/scenarios.h"

namespace depbench {
namespace {

constexpr int kFeatures = 256;
constexpr int kHidden = 256;
constexpr double kBaseRows = 512;
constexpr int kMinRows = 16;
constexpr int kBatches = 12;

// Decode and augment one batch: gamma-decode the raw values, standardise
// each sample, mirror every other one.
void load_batch(std::span<float> batch, int rows, std::uint64_t seed) {
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

  bool runs_on_device(const Config& config) const override { return config.device != "cpu"; }

  Footprint footprint(const Config& config) const override {
    const double rows = scaled_count(kBaseRows, config.size, kMinRows);
    // Host: two batch buffers and the hidden layer (on a GPU: also each
    // batch's pinned staging and the uploaded copy's), and the weights.
    const double batch_floats = rows * kFeatures;
    const double floats = (on_cuda(config) ? 2.0 * kBatches + 3 : 3.0) * batch_floats + 2.0 * kFeatures * kHidden;
    return {.int_counts = {{"batch rows", rows}}, .ops = 5.0 * kBatches + 4, .host_bytes = float_bytes(floats)};
  }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const int rows = scaled(kBaseRows, config.size, kMinRows);
    const int batches = kBatches;
    Outcome out = on_cuda(config) ? run_on_gpu(mode, config, trace, rows, batches)
                                  : run_on_host(mode, config, trace, rows, batches);
    out.metrics["batches"] = batches;
    out.metrics["batch_rows"] = rows;
    return out;
  }

 private:
  // Plain operations on host memory: the step on the CPU workers, or on
  // emulated:0 (whose memory is host memory).
  static Outcome run_on_host(Mode mode, const Config& config, Trace* trace, int rows, int batches) {
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
    return out;
  }

  // Loads on the CPU workers into host tensors; Tensor::copy_to uploads each
  // batch to cuda:0 (a CPU op moves it into pinned staging, the H2D copy
  // stream uploads it), where tensor ops run the same step by cuBLAS.
  static Outcome run_on_gpu(Mode mode, const Config& config, Trace* trace, int rows, int batches) {
    namespace ops = depengine::ops;
    using depengine::Tensor;
    const depengine::Device device = work_device(config, 0);
    const std::string upload_on = resource_of(device, depengine::OpProperty::CopyToDevice);
    const std::string step_on = resource_of(device, depengine::OpProperty::Normal);
    ask_cublas_for_reproducible_results();
    std::vector<float> trained;
    OpTimes times;
    Outcome out;
    {
      RunEngine engine(engine_kind(mode), trace);
      const Tensor buffers[2] = {Tensor::empty(*engine, {rows, kFeatures}), Tensor::empty(*engine, {rows, kFeatures})};
      const Floats initial = uniform(std::size_t(kFeatures) * kHidden, 7, -0.05f, 0.05f);
      const Tensor weights = Tensor::from_host(*engine, initial, {kFeatures, kHidden}, device);
      const Tensor hidden = Tensor::empty(*engine, {rows, kHidden}, depengine::DType::float32, device);
      engine->wait_all();  // weights on the GPU: only the pipeline is timed
      Stopwatch watch;
      for (int b = 0; b < batches; ++b) {
        const Tensor& batch = buffers[b % 2];
        double* load_slot = mode == Mode::sync ? times.add({}, {batch.var()}) : nullptr;
        const std::span<float> host_batch(static_cast<float*>(batch.data()), std::size_t(batch.numel()));
        engine->push([host_batch, rows, b, load_slot](depengine::RunContext&) {
                       timed(load_slot, [&] { load_batch(host_batch, rows, 1000 + b); });
                     },
                     {}, {batch.var()}, {.name = "load+augment"});
        // The naive engine returns from a push once the GPU has finished the
        // op, so in sync mode the pushes are the ops' times. The upload's
        // time counts its staging (a CPU op) as part of the copy.
        double upload_seconds = 0;
        Tensor on_gpu;
        timed(mode == Mode::sync ? &upload_seconds : nullptr, [&] { on_gpu = batch.copy_to(device); });
        if (mode == Mode::sync) *times.add({batch.var()}, {on_gpu.var()}, upload_on) = upload_seconds;
        double* step_slot =
            mode == Mode::sync ? times.add({on_gpu.var()}, {hidden.var(), weights.var()}, step_on)
                               : nullptr;
        timed(step_slot, [&] {
          // The host version's step: h = relu(x W); W -= lr/rows * x^T h.
          ops::gemm(on_gpu, weights, hidden);
          ops::relu(hidden, hidden);
          ops::gemm(on_gpu, hidden, weights, /*trans_a=*/true, /*trans_b=*/false, -1e-3 / rows, 1.0);
        });
      }
      engine->wait_all();
      out.seconds = watch.seconds();
      trained = weights.to_host<float>();
    }
    out.digest = digest(trained);
    if (mode == Mode::sync) out.ideal_speedup = times.ideal_speedup(cpu_workers());
    return out;
  }
};

}  // namespace

std::unique_ptr<Scenario> make_data_loading() { return std::make_unique<DataLoading>(); }

}  // namespace depbench
