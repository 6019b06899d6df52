// auto_parallel: two independent chains of matrix products, on two devices
// (d2l's "automatic parallelism"): with --device emulated, emulated:0 and
// emulated:1; on the CPU, the engine's CPU workers. Sync runs one chain after the
// other; async lets the engine run them at the same time, with nothing in
// the program saying so but the variables they touch.

#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/scenarios.h"

namespace depbench {
namespace {

class AutoParallel final : public Scenario {
 public:
  std::string name() const override { return "auto_parallel"; }
  std::string description() const override {
    return "two independent chains of matrix products; sync: one after the other, async: at the same time";
  }
  std::string ideal_formula() const override { return "(chain A + chain B) / max(chain A, chain B)"; }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const int n = scaled_side(384, config.size);
    const int steps = 12;
    struct Chain {
      Floats x, y;
      depengine::Var var;
    };
    Chain chains[2] = {{uniform(std::size_t(n) * n, 1), Floats(std::size_t(n) * n), {}},
                       {uniform(std::size_t(n) * n, 2), Floats(std::size_t(n) * n), {}}};
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
                           // x <- x * x / n keeps the values bounded.
                           gemm(chain.x.data(), chain.x.data(), chain.y.data(), n, n, n, 1.0f / static_cast<float>(n));
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
    out.metrics["matrix_side"] = n;
    out.metrics["products_per_chain"] = steps;
    return out;
  }
};

}  // namespace

std::unique_ptr<Scenario> make_auto_parallel() { return std::make_unique<AutoParallel>(); }

}  // namespace depbench
