// training_step: the MLP example's training loop (examples/mlp.h: a
// perceptron on the handwritten digits, or generated data shaped like them,
// with depengine's tensor ops; on cuda:0 with --device cuda, on the CPU
// otherwise), the same code in both modes. Sync: the naive
// engine, and the loss read after every step, as a synchronous framework
// (or a program that prints every loss) does. Async: the threaded engine,
// the losses read once per epoch. The ideal speedup comes from one more,
// profiled, sync epoch: the measured time and the read/write sets of every
// op, bounded by the critical path and the workers.

#include <limits>

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

constexpr double kBaseEpochs = 4;
constexpr std::int64_t kHidden = 256, kBatchRows = 32;
// At most, for the two-layer perceptron: forward, loss, backward, updates.
constexpr int kOpsPerStep = 24;

class TrainingStep final : public Scenario {
 public:
  std::string name() const override { return "training_step"; }
  std::string description() const override {
    return "the MLP example's training loop; sync: naive engine, loss read every step, async: losses read "
           "once per epoch";
  }
  std::string ideal_formula() const override {
    return "ops' time / max(critical path, ops' time / workers), from a profiled sync epoch";
  }
  // The MLP takes a device; the emulated device would only add a host
  // thread's hop to every small op, so it stays on the CPU there.
  bool runs_on_device(const Config& config) const override { return on_cuda(config); }

  Footprint footprint(const Config& config) const override {
    const double epochs = scaled_count(kBaseEpochs, config.size);
    const ex::Dataset& data = training_data();
    const double steps = std::ceil(double(data.rows) / kBatchRows);
    // The data set and the model do not grow with --size; the losses do.
    const double floats = 3.0 * data.features.size() + epochs;
    return {.int_counts = {{"epochs", epochs}},
            .ops = (epochs + 1) * steps * kOpsPerStep,  // one more, profiled, sync epoch
            .host_bytes = float_bytes(floats)};
  }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const int epochs = scaled(kBaseEpochs, config.size);
    const std::int64_t hidden = kHidden, batch_rows = kBatchRows;
    const ex::Dataset& data = training_data();
    const depengine::Device device = runs_on_device(config) ? work_device(config, 0) : depengine::Device::cpu();
    if (on_cuda(config)) ask_cublas_for_reproducible_results();
    Outcome out;
    std::vector<float> losses;
    {
      RunEngine engine(engine_kind(mode), trace);
      ex::Mlp mlp(*engine, {.layers = {data.cols, hidden, data.classes}, .learning_rate = 0.05, .device = device});
      const auto batches = ex::make_batches(*engine, data, batch_rows, depengine::DType::float32, device);
      engine->wait_all();  // weights and batches in place: only training is timed
      Stopwatch watch;
      for (int epoch = 0; epoch < epochs; ++epoch) {
        losses.push_back(static_cast<float>(ex::train_epoch(mlp, batches, /*block_each_step=*/mode == Mode::sync)));
      }
      out.seconds = watch.seconds();
      const ex::Dataset probe = ex::split(data, 0.1, 2).second;
      depengine::Tensor x = depengine::Tensor::from_host(*engine, probe.features, {probe.rows, probe.cols}, device);
      out.digest = digest(mlp.forward(x).to_host<float>(), digest(losses));
      if (mode == Mode::sync) {
        out.ideal_speedup = depengine::Profiler::available() ? ideal_from_profiled_epoch(*engine, mlp, batches)
                                                             : std::numeric_limits<double>::quiet_NaN();
      }
    }
    out.metrics["epochs"] = epochs;
    out.metrics["steps_per_epoch"] = static_cast<double>((data.rows + batch_rows - 1) / batch_rows);
    out.metrics["first_epoch_loss"] = losses.front();
    out.metrics["last_epoch_loss"] = losses.back();
    return out;
  }

 private:
  static double ideal_from_profiled_epoch(depengine::Engine& engine, ex::Mlp& mlp, const std::vector<ex::Batch>& batches) {
    depengine::Profiler profiler(engine);
    profiler.start();
    ex::train_epoch(mlp, batches, /*block_each_step=*/false);
    profiler.stop();
    OpTimes times;
    for (const depengine::ProfiledOp& op : profiler.ops()) {
      *times.add(op.read_ids, op.write_ids, stream_kind_of(op)) = op.duration_us * 1e-6;
    }
    return times.ideal_speedup(cpu_workers());
  }

  // The kind of stream a device op ran on ("cuda:0 compute stream 1" ->
  // "cuda:0 compute", as resource_of names them): the engine may pick
  // another stream of that kind in an async run.
  static std::string stream_kind_of(const depengine::ProfiledOp& op) {
    if (op.device == "cpu") return "cpu";
    return op.track.substr(0, op.track.rfind(" stream "));
  }
};

}  // namespace

std::unique_ptr<Scenario> make_training_step() { return std::make_unique<TrainingStep>(); }

}  // namespace depbench
