// overlap_copy_compute: a device computes batch after batch while the
// result of the previous batch is copied back to the host (with --device
// emulated, on emulated:0's compute stream and its D2H copy stream; with
// --device cuda, on cuda:0's, through cuBLAS and Tensor::copy_to, which
// copies into pinned host memory, the only memory a copy can overlap with
// compute from; on the CPU, by the CPU workers) (d2l: "computation
// and communication in parallel"). Results go to two device buffers in
// turn, so the engine may run copy k next to compute k+1 — and must hold
// compute k+2 until copy k has read its buffer. Sync runs copy and compute
// strictly one after the other.

#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/scenarios.h"

namespace depbench {
namespace {

constexpr int kBaseSide = 1024;
constexpr int kBatches = 16;
constexpr int kHostInner = 48;  // small inner dimension: the copy of the result weighs about as much as the product

class OverlapCopyCompute final : public Scenario {
 public:
  std::string name() const override { return "overlap_copy_compute"; }
  std::string description() const override {
    return "compute batch k+1 while batch k's result is copied back; sync: compute, copy, compute, copy";
  }
  std::string ideal_formula() const override {
    return "(copies + computes) / max(critical path, copies, computes / workers)";
  }
  bool runs_on_device(const Config& config) const override { return config.device != "cpu"; }

  Footprint footprint(const Config& config) const override {
    const double side = scaled_side_count(kBaseSide, config.size);
    // Host: every batch's result, two device buffers and the inputs (on a
    // GPU: the pinned results, their copies to compare, and one more).
    const double floats = on_cuda(config) ? 2.0 * kBatches * side * side + side * side
                                          : (kBatches + 2.0) * side * side + (kBatches + 1.0) * kHostInner * side;
    return {.int_counts = {{"matrix side", side}}, .ops = 2.0 * kBatches + 8, .host_bytes = float_bytes(floats)};
  }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const int side = scaled_side(kBaseSide, config.size);  // the result: side x side
    const int batches = kBatches;
    Outcome out = on_cuda(config) ? run_on_gpu(mode, config, trace, side, batches)
                                  : run_on_host(mode, config, trace, side, batches);
    out.metrics["batches"] = batches;
    out.metrics["result_mib"] = static_cast<double>(std::size_t(side) * side * sizeof(float)) / (1 << 20);
    return out;
  }

 private:
  // Plain operations on host memory: on the CPU workers, or on emulated:0's
  // streams (whose memory is host memory).
  static Outcome run_on_host(Mode mode, const Config& config, Trace* trace, int side, int batches) {
    const int inner = kHostInner;
    const std::size_t result_size = std::size_t(side) * side;
    std::vector<Floats> inputs;
    for (int b = 0; b < batches; ++b) inputs.push_back(uniform(std::size_t(side) * inner, 100 + b, -1, 1));
    const Floats weights = uniform(std::size_t(inner) * side, 99, -1, 1);
    Floats on_device[2] = {Floats(result_size), Floats(result_size)};
    Floats on_host(result_size * batches);

    const depengine::Device device = work_device(config, 0);
    const std::string compute_on = resource_of(device, depengine::OpProperty::Normal);
    const std::string copy_on = resource_of(device, depengine::OpProperty::CopyFromDevice);
    OpTimes times;
    Outcome out;
    {
      RunEngine engine(engine_kind(mode), trace, emulated_devices(config, 1));
      depengine::Var buffer[2] = {engine->new_var("device buffer 0"), engine->new_var("device buffer 1")};
      depengine::Var host = engine->new_var("host results");
      Stopwatch watch;
      for (int b = 0; b < batches; ++b) {
        Floats& result = on_device[b % 2];
        const float* input = inputs[b].data();
        double* compute_slot = mode == Mode::sync ? times.add({}, {buffer[b % 2]}, compute_on) : nullptr;
        engine->push([&result, &weights, input, side, compute_slot](depengine::RunContext&) {
                       timed(compute_slot, [&] {
                         gemm(input, weights.data(), result.data(), side, side, inner);
                         relu(result);
                       });
                     },
                     {}, {buffer[b % 2]}, {.name = "compute", .device = device});
        float* destination = on_host.data() + result_size * b;
        double* copy_slot = mode == Mode::sync ? times.add({buffer[b % 2]}, {host}, copy_on) : nullptr;
        engine->push([&result, destination, copy_slot](depengine::RunContext&) {
                       timed(copy_slot, [&] { copy(result, {destination, result.size()}); });
                     },
                     {buffer[b % 2]}, {host},
                     {.name = "copy to host", .device = device, .property = depengine::OpProperty::CopyFromDevice});
      }
      engine->wait_all();
      out.seconds = watch.seconds();
    }
    out.digest = digest(on_host);
    if (mode == Mode::sync) out.ideal_speedup = times.ideal_speedup(cpu_workers());
    return out;
  }

  // Tensor ops on cuda:0: the product by cuBLAS on a compute stream, the
  // copy by Tensor::copy_to on the D2H copy stream, straight into a new host
  // tensor in pinned memory.
  static Outcome run_on_gpu(Mode mode, const Config& config, Trace* trace, int side, int batches) {
    namespace ops = depengine::ops;
    using depengine::Tensor;
    // A GPU multiplies ~1000 times faster than it copies over PCIe (tens of
    // TFLOP/s against tens of GB/s): this inner size makes the product weigh
    // about as much as the copy of its result.
    const int inner = 2048;
    const depengine::Device device = work_device(config, 0);
    const std::string compute_on = resource_of(device, depengine::OpProperty::Normal);
    const std::string copy_on = resource_of(device, depengine::OpProperty::CopyFromDevice);
    ask_cublas_for_reproducible_results();
    std::vector<float> results;
    OpTimes times;
    Outcome out;
    {
      RunEngine engine(engine_kind(mode), trace);
      std::vector<Tensor> inputs;
      for (int b = 0; b < batches; ++b) {
        inputs.push_back(Tensor::uniform(*engine, {side, inner}, 100 + b, -1, 1, depengine::DType::float32, device));
      }
      const Tensor weights = Tensor::uniform(*engine, {inner, side}, 99, -1, 1, depengine::DType::float32, device);
      const Tensor on_device[2] = {Tensor::empty(*engine, {side, side}, depengine::DType::float32, device),
                                   Tensor::empty(*engine, {side, side}, depengine::DType::float32, device)};
      std::vector<Tensor> on_host;
      engine->wait_all();  // inputs on the GPU: only computing and copying back are timed
      Stopwatch watch;
      for (int b = 0; b < batches; ++b) {
        const Tensor& result = on_device[b % 2];
        // The naive engine returns from a push once the GPU has finished the
        // op, so in sync mode the pushes are the ops' times.
        double* compute_slot = mode == Mode::sync ? times.add({}, {result.var()}, compute_on) : nullptr;
        timed(compute_slot, [&] {
          ops::gemm(inputs[b], weights, result);
          ops::relu(result, result);
        });
        double copy_seconds = 0;
        timed(mode == Mode::sync ? &copy_seconds : nullptr,
              [&] { on_host.push_back(result.copy_to(depengine::Device::cpu())); });
        if (mode == Mode::sync) *times.add({result.var()}, {on_host.back().var()}, copy_on) = copy_seconds;
      }
      engine->wait_all();
      out.seconds = watch.seconds();
      for (const Tensor& batch : on_host) {
        const std::vector<float> values = batch.to_host<float>();
        results.insert(results.end(), values.begin(), values.end());
      }
    }
    out.digest = digest(results);
    if (mode == Mode::sync) out.ideal_speedup = times.ideal_speedup(cpu_workers());
    return out;
  }
};

}  // namespace

std::unique_ptr<Scenario> make_overlap_copy_compute() { return std::make_unique<OverlapCopyCompute>(); }

}  // namespace depbench
