// hybridize: the MLP example's training step (examples/mlp.h) pushed
// eagerly every step against the same steps captured once as graphs and
// replayed (include/depengine/graph.h) — the background chapter's "develop
// imperatively, then compile". A small model, so that what is compared is
// the engine's cost per op rather than the math. Sync: eager pushes on the
// threaded engine, the losses read once per epoch (eager-async). Async: one
// graph per batch, captured before the timed region, replayed every epoch.
// Sync runs also time eager-sync (the naive engine, the loss read after every
// step) as the metric eager_sync_seconds. The ideal speedup: the eager epoch
// against the ops' own time, bounded by the critical path and the workers
// (a replay can at best remove the engine's cost per op), from a profiled
// eager epoch.

#include <limits>

#include <depengine/graph.h>
#include <depengine/ops.h>
#include <depengine/profiler.h>

#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/digits.h"
#include "bench/depbench/scenarios/scenarios.h"
#include "examples/mlp.h"

namespace depbench {
namespace {

namespace ex = depengine::examples;

constexpr double kBaseEpochs = 20;
constexpr std::int64_t kHidden = 32, kBatchRows = 16;
constexpr int kOpsPerStep = 24;  // at most, as training_step counts them

// The epochs of one model on one engine, eager or replayed; returns the
// mean loss of each epoch and sets `seconds` to the time of the epochs.
struct Training {
  std::vector<float> losses;
  std::uint64_t digest = 0;
  double seconds = 0;
  double capture_seconds = 0;
};

ex::Mlp make_mlp(depengine::Engine& engine) {
  const ex::Dataset& data = training_data();
  return ex::Mlp(engine, {.layers = {data.cols, kHidden, data.classes}, .learning_rate = 0.05});
}

std::uint64_t probe_digest(depengine::Engine& engine, const ex::Mlp& mlp, const std::vector<float>& losses) {
  const ex::Dataset probe = ex::split(training_data(), 0.1, 2).second;
  depengine::Tensor x = depengine::Tensor::from_host(engine, probe.features, {probe.rows, probe.cols});
  return digest(mlp.forward(x).to_host<float>(), digest(losses));
}

Training train_eager(depengine::EngineKind kind, Trace* trace, int epochs, bool block_each_step) {
  Training t;
  RunEngine engine(kind, trace);
  ex::Mlp mlp = make_mlp(*engine);
  const auto batches = ex::make_batches(*engine, training_data(), kBatchRows, depengine::DType::float32,
                                        depengine::Device::cpu());
  engine->wait_all();
  Stopwatch watch;
  for (int e = 0; e < epochs; ++e) t.losses.push_back(static_cast<float>(ex::train_epoch(mlp, batches, block_each_step)));
  t.seconds = watch.seconds();
  t.digest = probe_digest(*engine, mlp, t.losses);
  return t;
}

Training train_replayed(Trace* trace, int epochs) {
  Training t;
  RunEngine engine(depengine::EngineKind::Threaded, trace);
  ex::Mlp mlp = make_mlp(*engine);
  const auto batches = ex::make_batches(*engine, training_data(), kBatchRows, depengine::DType::float32,
                                        depengine::Device::cpu());
  engine->wait_all();
  // Graphs before the losses they hand out: the loss tensors go first.
  std::vector<depengine::Graph> steps;
  std::vector<depengine::Tensor> losses;
  Stopwatch capture;
  for (const ex::Batch& batch : batches) {
    depengine::Tensor loss;
    steps.push_back(engine->capture([&] { loss = mlp.train_step(batch); }));
    losses.push_back(loss);
  }
  t.capture_seconds = capture.seconds();
  Stopwatch watch;
  for (int e = 0; e < epochs; ++e) {
    // As train_epoch, with each step replayed.
    depengine::Tensor total = depengine::Tensor::zeros(*engine, {});
    for (std::size_t b = 0; b < steps.size(); ++b) {
      engine->replay(steps[b]);
      depengine::ops::axpy(1.0 / static_cast<double>(steps.size()), losses[b], total);
    }
    t.losses.push_back(static_cast<float>(total.item<double>()));
  }
  t.seconds = watch.seconds();
  t.digest = probe_digest(*engine, mlp, t.losses);
  return t;
}

class Hybridize final : public Scenario {
 public:
  std::string name() const override { return "hybridize"; }
  std::string description() const override {
    return "a small MLP's training steps; sync: pushed eagerly every step (threaded engine, losses read once per "
           "epoch), async: captured once per batch as graphs and replayed";
  }
  std::string ideal_formula() const override {
    return "eager epoch / max(critical path, ops' time / workers), from a profiled eager epoch";
  }
  bool runs_on_device(const Config&) const override { return false; }

  Footprint footprint(const Config& config) const override {
    const double epochs = scaled_count(kBaseEpochs, config.size);
    const ex::Dataset& data = training_data();
    const double steps = std::ceil(double(data.rows) / kBatchRows);
    const double floats = 3.0 * data.features.size() + epochs;
    // Sync runs train twice more (eager-sync, the profiled epoch).
    return {.int_counts = {{"epochs", epochs}},
            .ops = (2 * epochs + 1) * steps * kOpsPerStep,
            .host_bytes = float_bytes(floats)};
  }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const int epochs = scaled(kBaseEpochs, config.size);
    Outcome out;
    const Training t = mode == Mode::sync ? train_eager(depengine::EngineKind::Threaded, trace, epochs, false)
                                          : train_replayed(trace, epochs);
    out.seconds = t.seconds;
    out.digest = t.digest;
    if (mode == Mode::sync) {
      const Training eager_sync = train_eager(depengine::EngineKind::Naive, nullptr, epochs, true);
      out.metrics["eager_sync_seconds"] = eager_sync.seconds;
      out.ideal_speedup = depengine::Profiler::available() ? ideal_from_profiled_epoch(t.seconds / epochs)
                                                           : std::numeric_limits<double>::quiet_NaN();
    } else {
      out.metrics["capture_seconds"] = t.capture_seconds;
    }
    out.metrics["epochs"] = epochs;
    out.metrics["steps_per_epoch"] = static_cast<double>((training_data().rows + kBatchRows - 1) / kBatchRows);
    out.metrics["last_epoch_loss"] = t.losses.back();
    return out;
  }

 private:
  static double ideal_from_profiled_epoch(double eager_epoch_seconds) {
    depengine::Engine engine({.read_environment = false});
    ex::Mlp mlp = make_mlp(engine);
    const auto batches = ex::make_batches(engine, training_data(), kBatchRows, depengine::DType::float32,
                                          depengine::Device::cpu());
    engine.wait_all();
    depengine::Profiler profiler(engine);
    profiler.start();
    ex::train_epoch(mlp, batches, /*block_each_step=*/false);
    profiler.stop();
    OpTimes times;
    for (const depengine::ProfiledOp& op : profiler.ops()) *times.add(op.read_ids, op.write_ids) = op.duration_us * 1e-6;
    const double bound = std::max(times.critical_path(), times.work() / cpu_workers());
    return bound > 0 ? eager_epoch_seconds / bound : std::numeric_limits<double>::quiet_NaN();
  }
};

}  // namespace

std::unique_ptr<Scenario> make_hybridize() { return std::make_unique<Hybridize>(); }

}  // namespace depbench
