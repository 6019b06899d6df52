// auto_parallel: two independent chains of matrix products, on two devices
// (d2l's "automatic parallelism"): with --device emulated, emulated:0 and
// emulated:1; with --device cuda, cuda:0 and cuda:1 (or two compute streams
// of cuda:0 on a one-GPU machine: the engine keeps each chain on one stream
// and spreads independent chains over its streams), through cuBLAS by the
// tensor ops; on the CPU, the engine's CPU workers. Sync runs one chain after
// the other; async lets the engine run them at the same time, with nothing in
// the program saying so but the variables they touch.

#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/scenarios.h"

namespace depbench {
namespace {

constexpr int kBaseSide = 384;
constexpr int kSteps = 12;

class AutoParallel final : public Scenario {
 public:
  std::string name() const override { return "auto_parallel"; }
  std::string description() const override {
    return "two independent chains of matrix products; sync: one after the other, async: at the same time";
  }
  std::string ideal_formula() const override { return "(chain A + chain B) / max(chain A, chain B)"; }
  bool runs_on_device(const Config& config) const override { return config.device != "cpu"; }

  Footprint footprint(const Config& config) const override {
    const double n = scaled_side_count(kBaseSide, config.size);
    // Per chain x, y and w on the host (on a GPU: the tensors' host copies).
    return {.int_counts = {{"matrix side", n}}, .ops = 2.0 * kSteps + 6, .host_bytes = float_bytes(6 * n * n)};
  }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const int n = scaled_side(kBaseSide, config.size);
    const int steps = kSteps;
    Outcome out = on_cuda(config) ? run_on_gpus(mode, config, trace, n, steps)
                                  : run_on_host(mode, config, trace, n, steps);
    out.metrics["matrix_side"] = n;
    out.metrics["products_per_chain"] = steps;
    return out;
  }

 private:
  // W uniform in [-sqrt(3/n), sqrt(3/n)) has variance 1/n, so x <- x W keeps
  // x's scale over the chain: the compared results are neither zeros nor
  // overflows, and no product runs on denormal numbers.
  static float weight_bound(int n) { return static_cast<float>(std::sqrt(3.0 / n)); }

  // The chains as plain operations on host memory: on the CPU workers, or on
  // the emulated devices (whose memory is host memory).
  static Outcome run_on_host(Mode mode, const Config& config, Trace* trace, int n, int steps) {
    struct Chain {
      Floats x, y, w;
      depengine::Var var;
    };
    const std::size_t size = std::size_t(n) * n;
    const float bound = weight_bound(n);
    Chain chains[2] = {{uniform(size, 1), Floats(size), uniform(size, 11, -bound, bound), {}},
                       {uniform(size, 2), Floats(size), uniform(size, 12, -bound, bound), {}}};
    OpTimes times;
    Outcome out;
    {
      RunEngine engine(engine_kind(mode), trace, emulated_devices(config, 2));
      for (int c = 0; c < 2; ++c) chains[c].var = engine->new_var(c == 0 ? "chain A" : "chain B");
      Stopwatch watch;
      // Pushed interleaved, as a program would write it: A, B, A, B, ...
      for (int s = 0; s < steps; ++s) {
        for (int c = 0; c < 2; ++c) {
          Chain& chain = chains[c];
          const depengine::Device device = work_device(config, c);
          double* slot = mode == Mode::sync ? times.add({}, {chain.var}, resource_of(device, {})) : nullptr;
          engine->push([&chain, n, slot](depengine::RunContext&) {
                         timed(slot, [&] {
                           gemm(chain.x.data(), chain.w.data(), chain.y.data(), n, n, n);
                           chain.x.swap(chain.y);
                         });
                       },
                       {}, {chain.var}, {.name = "matmul", .device = device});
        }
      }
      engine->wait_all();
      out.seconds = watch.seconds();
    }
    out.digest = digest(chains[1].x, digest(chains[0].x));
    if (mode == Mode::sync) out.ideal_speedup = times.ideal_speedup(cpu_workers());
    return out;
  }

  // The chains as tensor ops on the GPUs, x <- x W as on the host.
  static Outcome run_on_gpus(Mode mode, const Config& config, Trace* trace, int n, int steps) {
    namespace ops = depengine::ops;
    using depengine::Tensor;
    ask_cublas_for_reproducible_results();
    const double bound = weight_bound(n);
    const depengine::Shape shape = {n, n};
    std::vector<float> results[2];
    OpTimes times;
    Outcome out;
    {
      RunEngine engine(engine_kind(mode), trace);
      struct Chain {
        Tensor x, y, w;
        std::string resource;
      };
      Chain chains[2];
      for (int c = 0; c < 2; ++c) {
        const depengine::Device device = work_device(config, c);
        chains[c].x = Tensor::uniform(*engine, shape, 1 + c, 0.0, 1.0, depengine::DType::float32, device);
        chains[c].y = Tensor::empty(*engine, shape, depengine::DType::float32, device);
        chains[c].w = Tensor::uniform(*engine, shape, 11 + c, -bound, bound, depengine::DType::float32, device);
        chains[c].resource = resource_of(device, {});
      }
      if (work_device(config, 0) == work_device(config, 1)) {
        // One GPU: each chain keeps a compute stream of its own.
        chains[0].resource += " stream A";
        chains[1].resource += " stream B";
      }
      engine->wait_all();  // inputs in place: only the products are timed
      Stopwatch watch;
      for (int s = 0; s < steps; ++s) {
        for (Chain& chain : chains) {
          // The naive engine returns from a push once the GPU has finished
          // the op, so in sync mode the push is the op's time.
          double* slot = mode == Mode::sync ? times.add({chain.x.var(), chain.w.var()}, {chain.y.var()}, chain.resource)
                                            : nullptr;
          timed(slot, [&] { ops::gemm(chain.x, chain.w, chain.y); });
          std::swap(chain.x, chain.y);
        }
      }
      engine->wait_all();
      out.seconds = watch.seconds();
      for (int c = 0; c < 2; ++c) results[c] = chains[c].x.to_host<float>();
    }
    out.digest = digest(results[1], digest(results[0]));
    if (mode == Mode::sync) out.ideal_speedup = times.ideal_speedup(cpu_workers());
    return out;
  }
};

}  // namespace

std::unique_ptr<Scenario> make_auto_parallel() { return std::make_unique<AutoParallel>(); }

}  // namespace depbench
