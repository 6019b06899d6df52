// data_parallel: the MLP trained data-parallel (examples/data_parallel.h)
// with one replica per device — four emulated devices with --device
// emulated, four replicas on the CPU otherwise — and, when depbench runs
// under mpirun, on every process. Sync: the naive engine, and each step
// computes every gradient before it communicates any. Async: the threaded
// engine, each layer's allreduce pushed as soon as its gradients are, so
// that it overlaps the rest of backward. The ideal speedup comes from one
// more, profiled, sync epoch: the measured time and the read/write sets of
// every op, bounded by the critical path and the workers.

#include <limits>

#include <depengine/comm.h>
#include <depengine/emulated_device.h>
#include <depengine/profiler.h>

#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/digits.h"
#include "bench/depbench/scenarios/scenarios.h"
#include "examples/data_parallel.h"

namespace depbench {
namespace {

namespace ex = depengine::examples;

constexpr int kReplicas = 4;

class DataParallel final : public Scenario {
  static constexpr int kBaseEpochs = 3;
  static constexpr std::int64_t kHidden = 256, kBatchPerReplica = 32;
  static constexpr double kOpsPerReplicaStep = 256;

 public:
  std::string name() const override { return "data_parallel"; }
  std::string description() const override {
    return "the MLP trained data-parallel on 4 replicas; sync: naive engine, all gradients then the allreduces, "
           "async: each layer's allreduce pushed as its gradients are";
  }
  std::string ideal_formula() const override {
    return "ops' time / max(critical path, ops' time / workers or per stream), from a profiled sync epoch";
  }
  // The communicator takes CPU and emulated tensors only.
  bool runs_on_device(const Config& config) const override { return config.device == "emulated"; }

  Footprint footprint(const Config& config) const override {
    const double epochs = scaled_count(kBaseEpochs, config.size);
    const ex::Dataset& data = training_data();
    // At most one step per replica batch, each replica's forward, backward,
    // update and the chunk steps of its layers' allreduces: a bound, not a count.
    const double steps = std::ceil(double(data.rows) / kBatchPerReplica);
    const double params = double(data.cols) * kHidden + double(kHidden) * kHidden + double(kHidden) * data.classes;
    // Each replica's parameters, gradients and activations, and the data set.
    const double floats = kReplicas * (3.0 * params + 4.0 * kBatchPerReplica * kHidden) + 3.0 * data.features.size();
    return {.int_counts = {{"epochs", epochs}},
            .ops = (epochs + 1) * steps * kReplicas * kOpsPerReplicaStep,  // one more, profiled, sync epoch
            .host_bytes = float_bytes(floats)};
  }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const int epochs = scaled(kBaseEpochs, config.size);
    const std::int64_t hidden = kHidden, batch_per_replica = kBatchPerReplica;
    const ex::Dataset& data = training_data();
    Outcome out;
    std::vector<float> losses;
    {
      RunEngine engine(engine_kind(mode), trace);
      std::vector<depengine::Device> devices;
      for (int j = 0; j < kReplicas; ++j) {
        if (runs_on_device(config)) depengine::add_emulated_device(*engine, j);
        devices.push_back(runs_on_device(config) ? depengine::Device::emulated(j) : depengine::Device::cpu());
      }
      depengine::Communicator comm = depengine::Communicator::world(*engine);
      ex::DataParallelMlp mlp(*engine, comm,
                              {.layers = {data.cols, hidden, hidden, data.classes},
                               .learning_rate = 0.05 * kReplicas,
                               .devices = devices,
                               .overlap = mode == Mode::async});
      const auto shards = ex::shard_batches(*engine, data, batch_per_replica, mlp, comm.process_rank());
      engine->wait_all();  // replicas and batches in place: only training is timed
      Stopwatch watch;
      for (int epoch = 0; epoch < epochs; ++epoch) {
        std::vector<depengine::Tensor> last;
        for (const auto& step : shards) last = mlp.train_step(step);
        losses.push_back(last[0].item<float>());
      }
      out.seconds = watch.seconds();
      out.digest = digest(mlp.parameters(kReplicas - 1), digest(losses));
      if (mode == Mode::sync) {
        out.ideal_speedup = depengine::Profiler::available() ? ideal_from_profiled_epoch(*engine, mlp, shards)
                                                             : std::numeric_limits<double>::quiet_NaN();
      }
      out.metrics["processes"] = comm.process_count();
    }
    out.metrics["replicas_per_process"] = kReplicas;
    out.metrics["epochs"] = epochs;
    out.metrics["first_epoch_loss"] = losses.front();
    out.metrics["last_epoch_loss"] = losses.back();
    return out;
  }

 private:
  static double ideal_from_profiled_epoch(depengine::Engine& engine, ex::DataParallelMlp& mlp,
                                          const std::vector<std::vector<ex::Batch>>& shards) {
    depengine::Profiler profiler(engine);
    profiler.start();
    for (const auto& step : shards) mlp.train_step(step);
    engine.wait_all();
    profiler.stop();
    OpTimes times;
    for (const depengine::ProfiledOp& op : profiler.ops()) {
      // A device op may run on another stream of its kind in an async run.
      const std::string resource = op.device == "cpu" ? "cpu" : op.track.substr(0, op.track.rfind(" stream "));
      *times.add(op.read_ids, op.write_ids, resource) = op.duration_us * 1e-6;
    }
    return times.ideal_speedup(cpu_workers());
  }
};

}  // namespace

std::unique_ptr<Scenario> make_data_parallel() { return std::make_unique<DataParallel>(); }

}  // namespace depbench
