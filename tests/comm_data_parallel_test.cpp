// The differential test of data parallelism: training with k = 1, 2 and 4
// replicas on the same global batches gives the parameters of one model
// trained on those batches, up to float reassociation (the mean over the
// replicas of their mean gradients is the mean gradient of the global batch).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <depengine/comm.h>
#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <depengine/kvstore.h>

#include "examples/data_parallel.h"

namespace depengine {
namespace {

constexpr std::int64_t kGlobalBatch = 64;
constexpr int kEpochs = 3;

std::vector<float> train_replicated(int k, int epochs = kEpochs, bool overlap = true, const std::string& kvstore = "") {
  Engine engine(EngineOptions{.cpu_threads = 2, .read_environment = false});
  std::vector<Device> devices;
  for (int j = 0; j < k; ++j) {
    add_emulated_device(engine, j, {.compute_streams = 1});
    devices.push_back(Device::emulated(j));
  }
  Communicator comm = Communicator::world(engine);
  std::optional<KVStore> kv;
  if (!kvstore.empty()) kv.emplace(KVStore::create(engine, kvstore));
  const auto [all_train, test] = examples::split(examples::make_blobs(600, 16, 4, 3), 0.2, 1);
  const examples::Dataset train = examples::whole_global_batches(all_train, kGlobalBatch);
  examples::DataParallelMlp mlp(engine, comm,
                                {.layers = {16, 24, 4},
                                 .learning_rate = 0.2,
                                 .devices = devices,
                                 .overlap = overlap,
                                 .kvstore = kv ? &*kv : nullptr});
  const auto shards = examples::shard_batches(engine, train, kGlobalBatch / k, mlp, 0);
  for (int e = 0; e < epochs; ++e) {
    for (const auto& step : shards) mlp.train_step(step);
  }
  // Every replica ends with the same parameters, bit for bit: the
  // allreduce gives each the same mean.
  const std::vector<float> first = mlp.parameters(0);
  for (int j = 1; j < k; ++j) EXPECT_EQ(mlp.parameters(j), first) << "replica " << j << " of " << k;
  return first;
}

TEST(DataParallel, ReplicasMatchOneModelOnTheSameGlobalBatches) {
  const std::vector<float> one = train_replicated(1);
  const std::vector<float> untrained = train_replicated(1, 0);
  ASSERT_EQ(one.size(), untrained.size());
  double moved = 0;
  for (std::size_t i = 0; i < one.size(); ++i) moved = std::max(moved, static_cast<double>(std::abs(one[i] - untrained[i])));
  ASSERT_GT(moved, 1e-2) << "training did not change the parameters";
  for (int k : {2, 4}) {
    const std::vector<float> many = train_replicated(k);
    ASSERT_EQ(many.size(), one.size());
    for (std::size_t i = 0; i < one.size(); ++i) {
      ASSERT_NEAR(many[i], one[i], 1e-4 * (1.0 + std::abs(one[i]))) << "k = " << k << ", parameter " << i;
    }
  }
}

// Allreduces pushed as each layer's gradients are, or after all of them:
// the same operations on the same values, so the same bits.
TEST(DataParallel, OverlapChangesTheScheduleNotTheResults) {
  EXPECT_EQ(train_replicated(2, 2, /*overlap=*/true), train_replicated(2, 2, /*overlap=*/false));
}

// The gradients through a KVStore (pushed, summed, SGD where the values
// are stored, pulled) instead of the allreduce: the parameters of the
// allreduce path, up to float reassociation.
TEST(DataParallel, KVStoreMatchesTheAllreducePath) {
  const std::vector<float> allreduce = train_replicated(2);
  for (const char* type : {"local", "device", "dist_sync"}) {
    const std::vector<float> through_store = train_replicated(2, kEpochs, true, type);
    ASSERT_EQ(through_store.size(), allreduce.size());
    for (std::size_t i = 0; i < allreduce.size(); ++i) {
      ASSERT_NEAR(through_store[i], allreduce[i], 1e-5 * (1.0 + std::abs(allreduce[i]))) << type << ", parameter " << i;
    }
  }
}

}  // namespace
}  // namespace depengine
