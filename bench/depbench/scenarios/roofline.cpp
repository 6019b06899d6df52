// roofline: measures this machine's compute peak (matrix product, n = 512
// and 1024, best of several runs) and memory bandwidth (large copy, vector
// add), its balance point (FLOP per byte), and places each probe operation
// under the two ceilings by its arithmetic intensity: below the balance
// point an op waits for memory, above it for arithmetic. Sync measures the
// probes one at a time (those numbers make the plot); async runs the same
// probes at once, one per worker, which is what the whole machine delivers.

#include <functional>

#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/scenarios.h"

namespace depbench {
namespace {

struct Probe {
  std::string name;
  double flops = 0;
  double bytes = 0;  // the least traffic the op needs: each operand read or written once
  std::function<void()> fn;
  Floats* output = nullptr;
};

class Roofline final : public Scenario {
 public:
  std::string name() const override { return "roofline"; }
  std::string description() const override {
    return "compute peak, memory bandwidth and each op's arithmetic intensity; sync: one probe at a time, "
           "async: the probes at once";
  }
  std::string ideal_formula() const override { return "probes' time / max(longest probe, probes' time / workers)"; }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const int small = scaled_side(512, config.size), large = scaled_side(1024, config.size);
    const std::size_t length = static_cast<std::size_t>(scaled(4 << 20, config.size, 4096));
    const int runs = std::max(3, config.repeat);  // best of `runs` for each probe

    // Inputs and one output per probe.
    const Floats ma = uniform(std::size_t(large) * large, 21), mb = uniform(std::size_t(large) * large, 22);
    const Floats va = uniform(length, 23), vb = uniform(length, 24);
    Floats gemm_small(std::size_t(small) * small), gemm_large(std::size_t(large) * large),
        gemm_tiny(64 * 64), added(length), axpyed = vb, scaled_v = va, relued = va, copied(length), summed(1);
    const double n = static_cast<double>(length), fs = 4;  // bytes per float
    auto gemm_probe = [&](int side, Floats& out) {
      const double s = side;
      return Probe{"gemm " + std::to_string(side), 2 * s * s * s, 3 * s * s * fs,
                   [&ma, &mb, &out, side] { gemm(ma.data(), mb.data(), out.data(), side, side, side); }, &out};
    };
    std::vector<Probe> probes = {
        gemm_probe(large, gemm_large),
        gemm_probe(small, gemm_small),
        gemm_probe(64, gemm_tiny),
        {"add", n, 3 * n * fs, [&] { add(va, vb, added); }, &added},
        {"axpy", 2 * n, 3 * n * fs, [&] { axpy(0.5f, va, axpyed); }, &axpyed},
        {"scale", n, 2 * n * fs, [&] { scale(0.999f, scaled_v); }, &scaled_v},
        {"relu", n, 2 * n * fs, [&] { relu(relued); }, &relued},
        {"sum", n, n * fs, [&] { summed[0] = static_cast<float>(sum(va)); }, &summed},
        {"copy", 0, 2 * n * fs, [&] { copy(va, copied); }, &copied},
    };

    std::vector<std::vector<double*>> slots(probes.size());
    OpTimes times;
    Outcome out;
    {
      RunEngine engine(engine_kind(mode), trace);
      std::vector<depengine::Var> vars;
      for (const Probe& p : probes) vars.push_back(engine->new_var(p.name));
      Stopwatch watch;
      for (int r = 0; r < runs; ++r) {
        for (std::size_t i = 0; i < probes.size(); ++i) {
          double* slot = mode == Mode::sync ? times.add({}, {vars[i]}) : nullptr;
          slots[i].push_back(slot);
          const Probe* p = &probes[i];
          engine->push([p, slot](depengine::RunContext&) { timed(slot, p->fn); }, {}, {vars[i]},
                       {.name = p->name});
        }
      }
      engine->wait_all();
      out.seconds = watch.seconds();
    }
    for (const Probe& p : probes) out.digest = digest(*p.output, out.digest);
    if (mode == Mode::async) return out;

    out.ideal_speedup = times.ideal_speedup(cpu_workers());
    // Best of the runs: the least disturbed one is closest to the machine's limit.
    auto best = [&](std::size_t i) {
      double b = *slots[i].front();
      for (double* s : slots[i]) b = std::min(b, *s);
      return std::max(b, 1e-9);
    };
    double peak = 0, bandwidth = 0;
    for (std::size_t i = 0; i < probes.size(); ++i) {
      if (probes[i].name.rfind("gemm ", 0) == 0 && probes[i].name != "gemm 64") peak = std::max(peak, probes[i].flops / best(i));
      if (probes[i].name == "copy" || probes[i].name == "add") bandwidth = std::max(bandwidth, probes[i].bytes / best(i));
    }
    const double balance = peak / bandwidth;
    out.metrics["peak_gflops"] = peak * 1e-9;
    out.metrics["bandwidth_gbs"] = bandwidth * 1e-9;
    out.metrics["balance_flop_per_byte"] = balance;
    out.details = nlohmann::json::array();
    for (std::size_t i = 0; i < probes.size(); ++i) {
      const Probe& p = probes[i];
      const double intensity = p.flops / p.bytes;
      out.details.push_back({{"op", p.name},
                             {"flops", p.flops},
                             {"bytes", p.bytes},
                             {"intensity", intensity},
                             {"seconds", best(i)},
                             {"gflops", p.flops / best(i) * 1e-9},
                             {"gbs", p.bytes / best(i) * 1e-9},
                             {"bound", intensity < balance ? "bandwidth" : "compute"}});
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Scenario> make_roofline() { return std::make_unique<Roofline>(); }

}  // namespace depbench
