#pragma once
// Data-parallel training of the MLP of mlp.h, as the chapter describes it:
// one replica of the parameters per rank (each local device of each
// process), each global batch split among the replicas, every replica's
// gradients averaged by an allreduce, every replica updating its own copy.
// Backward pushes each layer's allreduce as soon as that layer's gradients
// are pushed, so the communication overlaps the rest of backward; the
// first layers' allreduces have the highest priority (their parameters are
// needed first in the next forward pass). With a KVStore in the config,
// the same step pushes the gradients and pulls the parameters instead.
//
//   depengine::Engine engine;
//   auto comm = depengine::Communicator::world(engine);
//   DataParallelMlp mlp(engine, comm, {.layers = {64, 64, 10}, .learning_rate = 0.4,
//                                      .devices = {Device::emulated(0), Device::emulated(1)}});
//   auto shards = shard_batches(engine, train, 32, mlp);   // [step][local replica]
//   for (const auto& step : shards) mlp.train_step(step);
//   double acc = mlp.accuracy(test);

#include <cstdint>
#include <vector>

#include <depengine/comm.h>
#include <depengine/engine.h>
#include <depengine/kvstore.h>
#include <depengine/tensor.h>

#include "examples/mlp.h"

namespace depengine::examples {

struct DataParallelConfig {
  std::vector<std::int64_t> layers;  // sizes: inputs, hidden..., classes
  double learning_rate = 0.1;
  std::uint64_t seed = 1;
  /// One replica per device, in local rank order.
  std::vector<Device> devices = {Device::cpu()};
  /// Push each layer's allreduces as soon as its gradients are pushed, so
  /// that they overlap the rest of backward; false pushes them after every
  /// layer's gradients (compute, then communicate). The results are equal.
  bool overlap = true;
  /// When set, the gradients go through this store instead of the
  /// allreduce: each layer's are pushed as soon as they are pushed (key 2l
  /// for layer l's weights, 2l + 1 for its bias), the store's SGD updates
  /// its copy (learning_rate, rescaled to the mean over the ranks), and
  /// every replica pulls the new parameters. For a dist store the
  /// communicator spans the store's workers.
  KVStore* kvstore = nullptr;
};

class DataParallelMlp {
 public:
  /// Every replica starts from the same parameters, initialised as Mlp does.
  DataParallelMlp(Engine& engine, Communicator& comm, DataParallelConfig config);

  /// Pushes one step: `parts[j]` is local replica j's share of the global
  /// batch. Returns the replicas' losses, without waiting.
  std::vector<Tensor> train_step(const std::vector<Batch>& parts);
  /// Replica 0's test accuracy (every replica holds the same parameters). Blocks.
  double accuracy(const Dataset& data) const;
  /// Local replica j's parameters, every layer's weights then bias, flattened. Blocks.
  std::vector<float> parameters(int replica = 0) const;

  int local_replicas() const { return static_cast<int>(config_.devices.size()); }
  /// Replicas of every process.
  int ranks() const { return local_replicas() * comm_.process_count(); }
  const DataParallelConfig& config() const { return config_; }

 private:
  Engine& engine_;
  Communicator& comm_;
  DataParallelConfig config_;
  std::vector<std::vector<Tensor>> weights_, biases_;  // [replica][layer]
};

/// The global batches of `batch_per_replica` rows per rank, in order, each
/// cut into the ranks' shares; returns this process's shares, [step][local
/// replica], on the replicas' devices. A last global batch too small for
/// every rank is left out.
std::vector<std::vector<Batch>> shard_batches(Engine& engine, const Dataset& data, std::int64_t batch_per_replica,
                                              const DataParallelMlp& mlp, int process_rank);

/// The rows of `data` the shards use: the first whole global batches.
Dataset whole_global_batches(const Dataset& data, std::int64_t global_batch);

}  // namespace depengine::examples
