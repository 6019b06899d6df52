// roofline: measures this machine's compute peak (matrix product, n = 512
// and 1024, best of several runs) and memory bandwidth (large copy, vector
// add), its balance point (FLOP per byte), and places each library op
// (depengine/ops.h, with the FLOP and byte counts the op itself reports)
// under the two ceilings by its arithmetic intensity: below the balance
// point an op waits for memory, above it for arithmetic. Sync runs the
// probes one at a time on the naive engine (those numbers make the plot);
// async runs the same probes at once on the threaded engine, one per
// worker: what the whole machine delivers.

#include <functional>

#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/scenarios.h"

namespace depbench {
namespace {

namespace ops = depengine::ops;
using depengine::Tensor;

struct Probe {
  std::string name;
  std::function<ops::Cost()> push;  // pushes the op once, returns its cost
  Tensor output;                    // compared between the modes
};

constexpr int kSmallSide = 512, kLargeSide = 1024, kTinySide = 64;
constexpr double kBaseLength = 4 << 20;
constexpr int kMinLength = 4096;
constexpr std::int64_t kClasses = 64;
constexpr int kProbes = 12;          // three products and nine vector ops, below
constexpr int kSetupOps = 2 * kProbes + 8;  // at most: the tensors they read and write, created and filled

int probe_runs(const Config& config) { return std::max(3, config.repeat); }  // best of `runs` for each probe

class Roofline final : public Scenario {
 public:
  std::string name() const override { return "roofline"; }
  std::string description() const override {
    return "compute peak, memory bandwidth and each library op's arithmetic intensity; sync: one probe at a "
           "time, async: the probes at once";
  }
  std::string ideal_formula() const override { return "probes' time / max(longest probe, probes' time / workers)"; }
  // It measures the CPU (its ops' peaks) or the engine's host-side costs.
  bool runs_on_device(const Config&) const override { return false; }

  Footprint footprint(const Config& config) const override {
    const double small = scaled_side_count(kSmallSide, config.size), large = scaled_side_count(kLargeSide, config.size);
    const double length = scaled_count(kBaseLength, config.size, kMinLength);
    const double rows = std::max(64.0, std::floor(length / 64));
    // Two inputs and seven outputs of `length`, one more for reading each
    // back; logits and their gradient; labels twice; three products' a, b, c.
    const double floats = 10 * length + 2 * rows * kClasses + 2 * rows +
                          3 * (large * large + small * small + double(kTinySide) * kTinySide);
    return {.int_counts = {{"vector length", length}, {"matrix side", large}},
            .ops = double(kProbes) * probe_runs(config) + kSetupOps,
            .host_bytes = float_bytes(floats)};
  }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const std::int64_t small = scaled_side(kSmallSide, config.size), large = scaled_side(kLargeSide, config.size);
    const std::int64_t length = scaled(kBaseLength, config.size, kMinLength);
    const std::int64_t rows = std::max<std::int64_t>(64, length / 64), classes = kClasses;
    const int runs = probe_runs(config);

    OpTimes times;
    Outcome out;
    std::vector<std::vector<double>> seconds;
    std::vector<ops::Cost> costs;
    std::vector<std::string> names;
    {
      RunEngine engine(engine_kind(mode), trace);
      depengine::Engine& e = *engine;
      // Inputs, read by the probes; one output per probe.
      const Tensor va = Tensor::uniform(e, {length}, 23, -1, 1), vb = Tensor::uniform(e, {length}, 24, -1, 1);
      const Tensor logits = Tensor::uniform(e, {rows, classes}, 25);
      std::vector<std::int32_t> label_values(static_cast<std::size_t>(rows));
      for (std::size_t i = 0; i < label_values.size(); ++i) label_values[i] = static_cast<std::int32_t>(i % classes);
      const Tensor labels = Tensor::from_host(e, std::span<const std::int32_t>(label_values), {rows});
      auto vector_out = [&] { return Tensor::zeros(e, {length}); };
      auto gemm_probe = [&](std::int64_t side) {
        Tensor c = Tensor::zeros(e, {side, side});
        Tensor a_block = Tensor::uniform(e, {side, side}, 31), b_block = Tensor::uniform(e, {side, side}, 32);
        return Probe{"gemm " + std::to_string(side), [a_block, b_block, c] { return ops::gemm(a_block, b_block, c); }, c};
      };
      std::vector<Probe> probes = {gemm_probe(large), gemm_probe(small), gemm_probe(kTinySide)};
      {
        Tensor o = vector_out();
        probes.push_back({"add", [&va, &vb, o] { return ops::add(va, vb, o); }, o});
      }
      {
        Tensor y = Tensor::zeros(e, {length});
        probes.push_back({"axpy", [&va, y] { return ops::axpy(0.5, va, y); }, y});
      }
      {
        Tensor o = vector_out();
        probes.push_back({"scale", [&va, o] { return ops::scale(va, 0.5, o); }, o});
      }
      {
        Tensor o = vector_out();
        probes.push_back({"relu", [&va, o] { return ops::relu(va, o); }, o});
      }
      {
        Tensor o = vector_out();
        probes.push_back({"relu_grad", [&va, &vb, o] { return ops::relu_grad(va, vb, o); }, o});
      }
      {
        Tensor o = Tensor::zeros(e, {});
        probes.push_back({"sum", [&va, o] { return ops::sum(va, o); }, o});
      }
      {
        Tensor w = Tensor::zeros(e, {length});
        probes.push_back({"sgd_update", [&vb, w] { return ops::sgd_update(w, vb, 0.01); }, w});
      }
      {
        Tensor loss = Tensor::zeros(e, {}), grad = Tensor::zeros(e, {rows, classes});
        probes.push_back({"softmax_xent", [&logits, &labels, loss, grad] {
                            return ops::softmax_cross_entropy(logits, labels, loss, grad);
                          }, grad});
      }
      {
        Tensor o = vector_out();
        probes.push_back({"copy", [&va, o] { return ops::copy(va, o); }, o});
      }
      e.wait_all();  // inputs ready: only the probes are timed

      seconds.resize(probes.size());
      costs.resize(probes.size());
      Stopwatch watch;
      for (int r = 0; r < runs; ++r) {
        for (std::size_t i = 0; i < probes.size(); ++i) {
          // The naive engine runs the op inside the call: its time is the call's.
          Stopwatch call;
          costs[i] = probes[i].push();
          if (mode == Mode::sync) {
            seconds[i].push_back(call.seconds());
            *times.add({}, {probes[i].output.var()}) = seconds[i].back();
          }
        }
      }
      e.wait_all();
      out.seconds = watch.seconds();
      for (const Probe& p : probes) {
        out.digest = digest(p.output.to_host<float>(), out.digest);
        names.push_back(p.name);
      }
    }
    if (mode == Mode::async) return out;

    out.ideal_speedup = times.ideal_speedup(cpu_workers());
    // Best of the runs: the least disturbed one is closest to the machine's limit.
    auto best = [&](std::size_t i) { return std::max(*std::min_element(seconds[i].begin(), seconds[i].end()), 1e-9); };
    double peak = 0, bandwidth = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == "gemm " + std::to_string(small) || names[i] == "gemm " + std::to_string(large)) {
        peak = std::max(peak, costs[i].flops / best(i));
      }
      if (names[i] == "copy" || names[i] == "add") bandwidth = std::max(bandwidth, costs[i].bytes / best(i));
    }
    const double balance = peak / bandwidth;
    out.metrics["peak_gflops"] = peak * 1e-9;
    out.metrics["bandwidth_gbs"] = bandwidth * 1e-9;
    out.metrics["balance_flop_per_byte"] = balance;
    out.details = nlohmann::json::array();
    for (std::size_t i = 0; i < names.size(); ++i) {
      const double intensity = costs[i].flops / costs[i].bytes;
      out.details.push_back({{"op", names[i]},
                             {"flops", costs[i].flops},
                             {"bytes", costs[i].bytes},
                             {"intensity", intensity},
                             {"seconds", best(i)},
                             {"gflops", costs[i].flops / best(i) * 1e-9},
                             {"gbs", costs[i].bytes / best(i) * 1e-9},
                             {"bound", intensity < balance ? "bandwidth" : "compute"}});
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Scenario> make_roofline() { return std::make_unique<Roofline>(); }

}  // namespace depbench
