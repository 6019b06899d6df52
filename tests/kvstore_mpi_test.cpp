// The dist KVStore types across processes: run under mpirun (ctest runs it
// with 2 and 3 processes); every process runs the same tests in the same
// order, each with shards in the workers (servers = 0) and on dedicated
// server processes (1, and 2 with 3 processes). On a server process the
// store's create() serves until the workers are done; the test body then
// ends there. Values are small integers, so sums compare exactly.
// Outside mpirun, or built without MPI, the tests skip.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <depengine/comm.h>
#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <depengine/kvstore.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "tests/support/engine_with_devices.h"
#include "tests/support/kvstore_values.h"

#if DEPENGINE_TEST_DATA_PARALLEL
#include "examples/data_parallel.h"
#endif

namespace depengine {
namespace {

constexpr int kDevices = 2;

int world_size() {
  static const int size = [] {
    Engine engine(EngineOptions{.cpu_threads = 1, .read_environment = false});
    return Communicator::world(engine).process_count();
  }();
  return size;
}

// The parameter: dedicated server processes (0: a shard in each process;
// kCentralShard: one shard, in process 0).
constexpr int kCentralShard = -1;

class KVStoreMpi : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (world_size() < 2) GTEST_SKIP() << "needs several processes (run under mpirun)";
    if (servers() >= world_size()) GTEST_SKIP() << servers() << " servers need more than " << world_size()
                                                << " processes";
    engine_ = engine_with_devices(kDevices);
  }
  KVStoreOptions options(std::size_t part_bytes = std::size_t{64} << 10) const {
    return {.servers = servers(), .shards = GetParam() == kCentralShard ? 1 : 0, .part_bytes = part_bytes, .updater = {}};
  }
  int servers() const { return std::max(GetParam(), 0); }
  int shards() const { return GetParam() == kCentralShard ? 1 : GetParam() > 0 ? GetParam() : world_size(); }
  int workers() const { return world_size() - servers(); }
  std::unique_ptr<Engine> engine_;
};

// Random keys and sizes (0, 1, odd, and large ones cut into parts spread
// over the shards), two devices per process, priorities: every pull sees
// the sum of every worker's every device.
TEST_P(KVStoreMpi, SyncPullSeesEveryWorkersPush) {
  Engine& engine = *engine_;
  auto kv = KVStore::create(engine, "dist_sync", options());
  if (!kv.is_worker()) return;
  EXPECT_EQ(kv.num_workers(), workers());
  EXPECT_EQ(kv.num_servers(), shards());
  EXPECT_NE(kv.describe().find("worker " + std::to_string(kv.rank())), std::string::npos) << kv.describe();
  std::mt19937 rng(11);  // the same keys on every process
  const std::vector<std::int64_t> sizes = {0, 1, 17, 1000, 100003};
  std::vector<int> keys;
  std::vector<DType> dtypes;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    keys.push_back(static_cast<int>(rng() % 100000));
    dtypes.push_back(k % 2 ? DType::float64 : DType::float32);
    // Only process 0's value counts.
    kv.init(keys[k], tensor_of(engine, sizes[k], dtypes[k], Device::cpu(), keys[k], 100 + kv.rank(), 0));
  }
  for (std::size_t k = 0; k < keys.size(); ++k) {
    Tensor out = Tensor::zeros(engine, {sizes[k]}, dtypes[k], Device::emulated(1));
    kv.pull(keys[k], {out});
    const std::vector<double> got = host_of(out);
    for (std::int64_t i = 0; i < sizes[k]; ++i) ASSERT_EQ(got[i], value_at(keys[k], 100, 0, i)) << i;
  }
  for (int round = 1; round <= 3; ++round) {
    std::vector<std::vector<Tensor>> outs(keys.size());
    for (std::size_t k = 0; k < keys.size(); ++k) {
      std::vector<Tensor> values;
      for (int d = 0; d < kDevices; ++d) {
        values.push_back(tensor_of(engine, sizes[k], dtypes[k], Device::emulated(d), keys[k],
                                   kv.rank() * kDevices + d, round));
        outs[k].push_back(Tensor::zeros(engine, {sizes[k]}, dtypes[k], Device::emulated(d)));
      }
      kv.pushpull(keys[k], values, outs[k], static_cast<int>(rng() % 3));
    }
    for (std::size_t k = 0; k < keys.size(); ++k) {
      for (const Tensor& out : outs[k]) {
        const std::vector<double> got = host_of(out);
        for (std::int64_t i = 0; i < sizes[k]; ++i) {
          double want = 0;
          for (int slot = 0; slot < workers() * kDevices; ++slot) want += value_at(keys[k], slot, round, i);
          ASSERT_EQ(got[static_cast<std::size_t>(i)], want) << "key " << keys[k] << " element " << i;
        }
      }
    }
  }
  kv.barrier();
}

// The naive engine runs each operation on the pushing thread, the KVStore's
// too: a push returns once sent, a pull once its reply came.
TEST_P(KVStoreMpi, NaiveEngine) {
  auto naive = engine_with_devices(kDevices, EngineKind::Naive);
  Engine& engine = *naive;
  auto kv = KVStore::create(engine, "dist_sync", options(1024));
  if (!kv.is_worker()) return;
  const std::int64_t n = 1001;
  kv.init(2, Tensor::zeros(engine, {n}));
  for (int round = 1; round <= 3; ++round) {
    std::vector<Tensor> values, outs;
    for (int d = 0; d < kDevices; ++d) {
      values.push_back(tensor_of(engine, n, DType::float32, Device::emulated(d), 2, kv.rank() * kDevices + d, round));
      outs.push_back(Tensor::empty(engine, {n}, DType::float32, Device::emulated(d)));
    }
    kv.pushpull(2, values, outs);
    for (const Tensor& out : outs) {
      const std::vector<double> got = host_of(out);
      for (std::int64_t i = 0; i < n; ++i) {
        double want = 0;
        for (int slot = 0; slot < workers() * kDevices; ++slot) want += value_at(2, slot, round, i);
        ASSERT_EQ(got[static_cast<std::size_t>(i)], want) << i;
      }
    }
  }
}

// Pushes of several rounds before a pull: the shard applies them round by
// round, and a pull sees the rounds this worker pushed before it.
TEST_P(KVStoreMpi, SyncRoundsApplyInOrder) {
  Engine& engine = *engine_;
  KVStoreOptions o = options();
  o.updater = [](int, const Tensor& merged, Tensor& stored) { ops::axpy(1.0, merged, stored); };
  auto kv = KVStore::create(engine, "dist_sync", o);
  if (!kv.is_worker()) return;
  const std::int64_t n = 40000;  // several parts
  kv.init(3, Tensor::zeros(engine, {n}));
  Tensor out = Tensor::empty(engine, {n});
  for (int round = 0; round < 4; ++round) kv.push(3, {Tensor::full(engine, {n}, 1.0 + round)});
  kv.pull(3, {out});
  const float want = static_cast<float>(workers() * (1 + 2 + 3 + 4));
  for (float v : out.to_host<float>()) ASSERT_EQ(v, want);
}

// dist_sync with SGD (momentum, weight decay) gives the parameters of a
// "local" store fed every worker's gradients in this process.
TEST_P(KVStoreMpi, SyncSgdMatchesLocal) {
  Engine& engine = *engine_;
  auto kv = KVStore::create(engine, "dist_sync", options(4096));
  if (!kv.is_worker()) return;
  auto reference = KVStore::create(engine, "local");
  const SGDOptimizer sgd{.learning_rate = 0.05, .momentum = 0.9, .weight_decay = 0.001, .rescale_grad = 0.25};
  kv.set_optimizer(sgd);
  reference.set_optimizer(sgd);
  const std::int64_t n = 3001;
  kv.init(8, tensor_of(engine, n, DType::float64, Device::cpu(), 8, 0, 0));
  reference.init(8, tensor_of(engine, n, DType::float64, Device::cpu(), 8, 0, 0));
  Tensor mine = Tensor::empty(engine, {n}, DType::float64), theirs = Tensor::empty(engine, {n}, DType::float64);
  for (int round = 1; round <= 4; ++round) {
    kv.pushpull(8, {tensor_of(engine, n, DType::float64, Device::emulated(0), 8, kv.rank(), round)}, {mine});
    std::vector<Tensor> all;
    for (int w = 0; w < workers(); ++w) all.push_back(tensor_of(engine, n, DType::float64, Device::cpu(), 8, w, round));
    reference.pushpull(8, all, {theirs});
  }
  const std::vector<double> a = mine.to_host<double>(), b = theirs.to_host<double>();
  for (std::int64_t i = 0; i < n; ++i) ASSERT_NEAR(a[i], b[i], 1e-12 * (1 + std::abs(b[i]))) << i;
}

// dist_async: every push is applied as it arrives; once all arrived, the
// value holds all of them.
TEST_P(KVStoreMpi, AsyncAppliesEveryPush) {
  Engine& engine = *engine_;
  KVStoreOptions o = options(1024);
  o.updater = [](int, const Tensor& merged, Tensor& stored) { ops::axpy(1.0, merged, stored); };
  auto kv = KVStore::create(engine, "dist_async", o);
  if (!kv.is_worker()) return;
  const std::int64_t n = 1000;
  kv.init(4, Tensor::zeros(engine, {n}));
  for (int round = 0; round < 5; ++round) {
    kv.push(4, {Tensor::full(engine, {n}, 1.0, DType::float32, Device::emulated(0)),
                Tensor::full(engine, {n}, 1.0, DType::float32, Device::emulated(1))});
  }
  kv.barrier();
  // Every worker's pushes left before the barrier; they reach the shards
  // in their own time, so pull until the last one is in (a bounded loop).
  const float want = static_cast<float>(workers() * 5 * kDevices);
  Tensor out = Tensor::empty(engine, {n});
  std::vector<float> got;
  for (int attempt = 0; attempt < 10000; ++attempt) {
    kv.pull(4, {out});
    got = out.to_host<float>();
    if (std::all_of(got.begin(), got.end(), [want](float v) { return v == want; })) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (float v : got) ASSERT_EQ(v, want);
}

// dist_async is asynchronous: worker 0 pushes and pulls five rounds while
// the other workers wait in a barrier that needs worker 0, and each of its
// pulls already sees its own pushes. (Under dist_sync the first pull would
// wait for the others' pushes, which come only after the barrier.)
TEST_P(KVStoreMpi, AsyncSlowWorkerDoesNotStallTheOthers) {
  if (workers() < 2) GTEST_SKIP() << "needs two workers";
  Engine& engine = *engine_;
  KVStoreOptions o = options();
  o.updater = [](int, const Tensor& merged, Tensor& stored) { ops::axpy(1.0, merged, stored); };
  auto kv = KVStore::create(engine, "dist_async", o);
  if (!kv.is_worker()) return;
  const std::int64_t n = 100;
  kv.init(6, Tensor::zeros(engine, {n}));
  if (kv.rank() == 0) {
    Tensor out = Tensor::empty(engine, {n});
    for (int round = 1; round <= 5; ++round) {
      kv.pushpull(6, {Tensor::full(engine, {n}, 1.0)}, {out});
      for (float v : out.to_host<float>()) ASSERT_EQ(v, static_cast<float>(round));
    }
  }
  kv.barrier();
}

// Processes that initialise a key with different shapes or dtypes: the
// init fails on every worker (the next blocking call on the key's tensors
// says why), and the store goes on working for other keys.
TEST_P(KVStoreMpi, InitWithDifferentShapesFailsOnEveryWorker) {
  if (workers() < 2) GTEST_SKIP() << "needs two workers";
  Engine& engine = *engine_;
  auto kv = KVStore::create(engine, "dist_sync", options());
  if (!kv.is_worker()) return;
  const std::int64_t n = 4 + kv.rank();
  kv.init(9, Tensor::zeros(engine, {n}));
  kv.init(10, Tensor::zeros(engine, {8}, kv.rank() == 0 ? DType::float32 : DType::float64));
  Tensor out = Tensor::empty(engine, {n});
  kv.pull(9, {out});
  try {
    out.to_host<float>();
    ADD_FAILURE() << "the pull of a key initialised with different shapes succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("initialised key 9 differently"), std::string::npos) << e.what();
  }
  Tensor other = Tensor::empty(engine, {8}, kv.rank() == 0 ? DType::float32 : DType::float64);
  kv.pull(10, {other});
  EXPECT_THROW(engine.wait_to_read(other.var()), std::runtime_error);
  kv.init(11, Tensor::full(engine, {5}, 3.0));
  Tensor good = Tensor::empty(engine, {5});
  kv.pushpull(11, {Tensor::full(engine, {5}, 1.0)}, {good});
  for (float v : good.to_host<float>()) EXPECT_EQ(v, static_cast<float>(workers()));
}

// On a worker whose values live on dedicated servers, the updater must come
// with the options (the servers never see set_updater).
TEST_P(KVStoreMpi, SetUpdaterNeedsLocalShards) {
  if (servers() == 0) GTEST_SKIP() << "co-located shards take set_updater";
  Engine& engine = *engine_;
  auto kv = KVStore::create(engine, "dist_sync", options());
  if (!kv.is_worker()) return;
  EXPECT_THROW(kv.set_updater([](int, const Tensor&, Tensor&) {}), std::logic_error);
}

#if DEPENGINE_TEST_DATA_PARALLEL
// The MLP of the data-parallel example trained over every process: the
// gradients through dist_sync (shards in the processes, SGD on them) give
// the parameters of the Communicator's allreduce path.
std::vector<float> train_data_parallel(const char* kvstore) {
  auto engine = engine_with_devices(kDevices);
  Communicator comm = Communicator::world(*engine);
  std::optional<KVStore> kv;
  if (kvstore) kv.emplace(KVStore::create(*engine, kvstore));
  const std::int64_t batch_per_replica = 8;
  const auto [all_train, test] = examples::split(examples::make_blobs(600, 16, 4, 3), 0.2, 1);
  const int ranks = kDevices * comm.process_count();
  const examples::Dataset train = examples::whole_global_batches(all_train, batch_per_replica * ranks);
  examples::DataParallelMlp mlp(*engine, comm,
                                {.layers = {16, 24, 4},
                                 .learning_rate = 0.2,
                                 .devices = {Device::emulated(0), Device::emulated(1)},
                                 .kvstore = kv ? &*kv : nullptr});
  const auto shards = examples::shard_batches(*engine, train, batch_per_replica, mlp, comm.process_rank());
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (const auto& step : shards) mlp.train_step(step);
  }
  return mlp.parameters(1);
}

TEST(KVStoreMpiDataParallel, DistSyncMatchesTheAllreducePath) {
  if (world_size() < 2) GTEST_SKIP() << "needs several processes (run under mpirun)";
  const std::vector<float> allreduce = train_data_parallel(nullptr);
  const std::vector<float> through_store = train_data_parallel("dist_sync");
  ASSERT_EQ(through_store.size(), allreduce.size());
  for (std::size_t i = 0; i < allreduce.size(); ++i) {
    ASSERT_NEAR(through_store[i], allreduce[i], 1e-5 * (1.0 + std::abs(allreduce[i]))) << "parameter " << i;
  }
}
#endif

INSTANTIATE_TEST_SUITE_P(Servers, KVStoreMpi, ::testing::Values(0, kCentralShard, 1, 2), [](const auto& info) {
  return info.param == kCentralShard ? std::string("central_shard") : "servers" + std::to_string(info.param);
});

}  // namespace
}  // namespace depengine
