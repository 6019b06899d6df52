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

#include "comm/kv_sharding.h"
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

// String keys across processes: sharded like the ints they stand for
// (a name cut into parts too); a name never initialised throws at the call.
TEST_P(KVStoreMpi, StringKeys) {
  Engine& engine = *engine_;
  auto kv = KVStore::create(engine, "dist_sync", options(1024));
  if (!kv.is_worker()) return;
  const std::vector<std::string> names = {"layer0.weight", "layer0.bias", "w"};
  const std::vector<std::int64_t> sizes = {1000, 3, 0};
  std::vector<Tensor> inits;
  for (std::int64_t n : sizes) inits.push_back(Tensor::zeros(engine, {n}));
  kv.init(names, inits);
  for (int round = 1; round <= 2; ++round) {
    for (std::size_t k = 0; k < names.size(); ++k) {
      const int key = KVStore::key_of(names[k]);
      Tensor out = Tensor::empty(engine, {sizes[k]});
      kv.pushpull(names[k], {tensor_of(engine, sizes[k], DType::float32, Device::cpu(), key, kv.rank(), round)},
                  {out});
      const std::vector<double> got = host_of(out);
      for (std::int64_t i = 0; i < sizes[k]; ++i) {
        double want = 0;
        for (int w = 0; w < workers(); ++w) want += value_at(key, w, round, i);
        ASSERT_EQ(got[static_cast<std::size_t>(i)], want) << names[k] << " element " << i;
      }
    }
  }
  EXPECT_THROW(kv.pull("layer1.weight", {Tensor::empty(engine, {1000})}), std::invalid_argument);
  kv.barrier();
}

// A key whose first part lives on `shard` (of `shards`), from `from` on.
int key_on_shard(int shard, int shards, int from) {
  int key = from;
  while (detail::kv_shard_of(key, 0, shards) != shard) ++key;
  return key;
}

// Every shard's keys, so that each process pushes and pulls keys of its own
// shard (handed over without MPI) and of the others': the results are the
// same. Small keys, keys cut into parts over every shard, and rounds pushed
// before a pull (the shard's own process's push waits in the round for the
// others'), in dist_sync and dist_async.
TEST_P(KVStoreMpi, OwnShardGivesTheSameResults) {
  if (servers() > 0) GTEST_SKIP() << "dedicated servers: no worker hosts a shard";
  Engine& engine = *engine_;
  const std::size_t part_bytes = 1024;
  for (const char* type : {"dist_sync", "dist_async"}) {
    SCOPED_TRACE(type);
    KVStoreOptions o = options(part_bytes);
    o.updater = [](int, const Tensor& merged, Tensor& stored) { ops::axpy(1.0, merged, stored); };
    auto kv = KVStore::create(engine, type, o);
    std::vector<int> keys;
    std::vector<std::int64_t> sizes;
    for (int s = 0; s < shards(); ++s) {
      for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{255}, std::int64_t{1000}}) {
        keys.push_back(key_on_shard(s, shards(), keys.empty() ? 500 : keys.back() + 1));
        sizes.push_back(n);  // 1000 float32 elements: 4 parts, spread over the shards
      }
    }
    for (std::size_t k = 0; k < keys.size(); ++k) kv.init(keys[k], Tensor::zeros(engine, {sizes[k]}));
    const int rounds = 3;
    for (int round = 1; round <= rounds; ++round) {
      for (std::size_t k = 0; k < keys.size(); ++k) {
        kv.push(keys[k], {tensor_of(engine, sizes[k], DType::float32, Device::emulated(0), keys[k], kv.rank(), round),
                          tensor_of(engine, sizes[k], DType::float32, Device::cpu(), keys[k], kv.rank() + 100, round)});
      }
    }
    // dist_async: the others' pushes may still be on their way; the
    // barrier after every worker's pushes and a bounded retry wait for them.
    kv.barrier();
    for (std::size_t k = 0; k < keys.size(); ++k) {
      std::vector<double> want(static_cast<std::size_t>(sizes[k]), 0.0);
      for (int round = 1; round <= rounds; ++round) {
        for (int w = 0; w < workers(); ++w) {
          for (std::int64_t i = 0; i < sizes[k]; ++i) {
            want[i] += value_at(keys[k], w, round, i) + value_at(keys[k], w + 100, round, i);
          }
        }
      }
      Tensor out = Tensor::full(engine, {sizes[k]}, -1.0, DType::float32, Device::emulated(1));
      std::vector<double> got;
      for (int attempt = 0; attempt < 10000; ++attempt) {
        kv.pull(keys[k], {out});
        got = host_of(out);
        if (got == want) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      ASSERT_EQ(got, want) << "key " << keys[k] << " of " << sizes[k] << " elements";
    }
    kv.barrier();
  }
}

// The blocking read of `t` fails with an error that mentions `needle`.
void expect_read_fails(Engine& engine, const Tensor& t, const std::string& what, const std::string& needle) {
  try {
    engine.wait_to_read(t.var());
    ADD_FAILURE() << what << " succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// The errors of a key on the process's own shard and on another's: bad
// calls throw at once; processes that initialised a key differently, and
// an updater that throws on the shard, fail the key's pulls on every
// worker; other keys keep working.
TEST_P(KVStoreMpi, OwnShardErrors) {
  if (servers() > 0) GTEST_SKIP() << "dedicated servers: no worker hosts a shard";
  if (workers() < 2) GTEST_SKIP() << "needs two workers";
  Engine& engine = *engine_;
  std::vector<int> failing;  // keys whose updater throws
  for (int s = 0; s < shards(); ++s) failing.push_back(key_on_shard(s, shards(), failing.empty() ? 700 : failing.back() + 1));
  KVStoreOptions o = options();
  o.updater = [failing](int key, const Tensor& merged, Tensor& stored) {
    if (std::find(failing.begin(), failing.end(), key) != failing.end()) throw std::runtime_error("no update here");
    ops::axpy(1.0, merged, stored);
  };
  auto kv = KVStore::create(engine, "dist_sync", o);
  for (int s = 0; s < shards(); ++s) {
    SCOPED_TRACE("shard " + std::to_string(s));
    const int unknown = key_on_shard(s, shards(), 900);
    EXPECT_THROW(kv.pull(unknown, {Tensor::empty(engine, {3})}), std::invalid_argument);
    EXPECT_THROW(kv.push(unknown, {Tensor::empty(engine, {3})}), std::invalid_argument);
    const int good = key_on_shard(s, shards(), 1000);
    kv.init(good, Tensor::zeros(engine, {6}));
    EXPECT_THROW(kv.push(good, {Tensor::zeros(engine, {7})}), std::invalid_argument);
    EXPECT_THROW(kv.pull(good, {Tensor::zeros(engine, {6}, DType::float64)}), std::invalid_argument);

    const int mismatched = key_on_shard(s, shards(), 1100);
    kv.init(mismatched, Tensor::zeros(engine, {4 + kv.rank()}));
    Tensor out = Tensor::empty(engine, {4 + kv.rank()});
    kv.pull(mismatched, {out});
    expect_read_fails(engine, out, "the pull of key " + std::to_string(mismatched) + ", initialised differently",
                      "initialised key " + std::to_string(mismatched) + " differently");

    kv.init(failing[s], Tensor::zeros(engine, {5}));
    Tensor failed = Tensor::empty(engine, {5});
    kv.pushpull(failing[s], {Tensor::full(engine, {5}, 1.0)}, {failed});
    expect_read_fails(engine, failed, "the pull of key " + std::to_string(failing[s]) + ", whose update threw",
                      "no update here");
    Tensor again = Tensor::empty(engine, {5});
    kv.pull(failing[s], {again});
    EXPECT_THROW(engine.wait_to_read(again.var()), std::runtime_error);

    Tensor fine = Tensor::empty(engine, {6});
    kv.pushpull(good, {Tensor::full(engine, {6}, 2.0)}, {fine});
    for (float v : fine.to_host<float>()) EXPECT_EQ(v, 2.0f * static_cast<float>(workers()));
  }
  kv.barrier();
}

// pushpull is one request per part whose reply follows the round's merge;
// on the process's own shard, without an updater, that merge writes the
// output itself. On keys of every shard (the own process's and the
// others'), after a round pushed without a pull, into other tensors on two
// devices and into the pushed tensor itself, for several rounds: each
// output holds the round's value, and a pull afterwards sees the same.
void check_pushpull_on_every_shard(Engine& engine, KVStore& kv, int shards, int workers, bool with_updater) {
  std::vector<int> keys;
  std::vector<std::int64_t> sizes;
  for (int s = 0; s < shards; ++s) {
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{255}, std::int64_t{1000}}) {
      keys.push_back(key_on_shard(s, shards, keys.empty() ? 1300 : keys.back() + 1));
      sizes.push_back(n);  // 1000 float32 elements: 4 parts of 1 KiB over the shards
    }
  }
  for (std::size_t k = 0; k < keys.size(); ++k) kv.init(keys[k], Tensor::zeros(engine, {sizes[k]}));
  // What every worker's pushes of `round` add up to (two local values from
  // rounds pushed from two devices, one from the pushed-into tensor).
  const auto round_sum = [&](std::size_t k, int round, bool two_values) {
    std::vector<double> sum(static_cast<std::size_t>(sizes[k]), 0.0);
    for (int w = 0; w < workers; ++w) {
      for (std::int64_t i = 0; i < sizes[k]; ++i) {
        sum[i] += value_at(keys[k], w, round, i) + (two_values ? value_at(keys[k], w + 100, round, i) : 0.0);
      }
    }
    return sum;
  };
  std::vector<std::vector<double>> stored(keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) stored[k].assign(static_cast<std::size_t>(sizes[k]), 0.0);
  const auto expect_round = [&](std::size_t k, int round, bool two_values) {
    const std::vector<double> sum = round_sum(k, round, two_values);
    for (std::size_t i = 0; i < sum.size(); ++i) stored[k][i] = with_updater ? stored[k][i] + sum[i] : sum[i];
    return stored[k];
  };
  const int rounds = 4;
  for (int round = 1; round <= rounds; ++round) {
    for (std::size_t k = 0; k < keys.size(); ++k) {
      SCOPED_TRACE("key " + std::to_string(keys[k]) + " of " + std::to_string(sizes[k]) + " elements, round " +
                   std::to_string(round));
      const int slot = kv.rank();
      if (round == 1) {
        kv.push(keys[k], {tensor_of(engine, sizes[k], DType::float32, Device::emulated(0), keys[k], slot, round),
                          tensor_of(engine, sizes[k], DType::float32, Device::cpu(), keys[k], slot + 100, round)});
        expect_round(k, round, true);
      } else if (round == 2) {
        Tensor on_device = Tensor::full(engine, {sizes[k]}, -1.0, DType::float32, Device::emulated(1));
        Tensor on_host = Tensor::full(engine, {sizes[k]}, -1.0);
        kv.pushpull(keys[k],
                    {tensor_of(engine, sizes[k], DType::float32, Device::emulated(0), keys[k], slot, round),
                     tensor_of(engine, sizes[k], DType::float32, Device::cpu(), keys[k], slot + 100, round)},
                    {on_device, on_host});
        const std::vector<double> want = expect_round(k, round, true);
        EXPECT_EQ(host_of(on_device), want);
        EXPECT_EQ(host_of(on_host), want);
      } else {
        Tensor t = tensor_of(engine, sizes[k], DType::float32, Device::cpu(), keys[k], slot, round);
        kv.pushpull(keys[k], {t}, {t});
        EXPECT_EQ(host_of(t), expect_round(k, round, false));
      }
    }
  }
  for (std::size_t k = 0; k < keys.size(); ++k) {
    Tensor out = Tensor::full(engine, {sizes[k]}, -1.0);
    kv.pull(keys[k], {out});
    EXPECT_EQ(host_of(out), stored[k]) << "key " << keys[k];
  }
  kv.barrier();
}

TEST_P(KVStoreMpi, PushpullWithoutUpdaterOnEveryShard) {
  auto kv = KVStore::create(*engine_, "dist_sync", options(1024));
  if (!kv.is_worker()) return;
  check_pushpull_on_every_shard(*engine_, kv, shards(), workers(), false);
}

TEST_P(KVStoreMpi, PushpullWithUpdaterOnEveryShard) {
  KVStoreOptions o = options(1024);
  o.updater = [](int, const Tensor& merged, Tensor& stored) { ops::axpy(1.0, merged, stored); };
  auto kv = KVStore::create(*engine_, "dist_sync", o);
  if (!kv.is_worker()) return;
  check_pushpull_on_every_shard(*engine_, kv, shards(), workers(), true);
}

// A pushpull of a key the processes initialised differently fails on every
// worker, on the own shard and on the others', and the store goes on.
TEST_P(KVStoreMpi, PushpullOfAMismatchedKeyFails) {
  if (workers() < 2) GTEST_SKIP() << "needs two workers";
  Engine& engine = *engine_;
  auto kv = KVStore::create(engine, "dist_sync", options());
  if (!kv.is_worker()) return;
  for (int s = 0; s < shards(); ++s) {
    SCOPED_TRACE("shard " + std::to_string(s));
    const int mismatched = key_on_shard(s, shards(), 1500);
    kv.init(mismatched, Tensor::zeros(engine, {4 + kv.rank()}));
    Tensor t = Tensor::full(engine, {4 + kv.rank()}, 1.0);
    kv.pushpull(mismatched, {t}, {t});
    expect_read_fails(engine, t, "the pushpull of key " + std::to_string(mismatched) + ", initialised differently",
                      "initialised key " + std::to_string(mismatched) + " differently");
    const int good = key_on_shard(s, shards(), 1600);
    kv.init(good, Tensor::zeros(engine, {3}));
    Tensor fine = Tensor::full(engine, {3}, 2.0);
    kv.pushpull(good, {fine}, {fine});
    for (float v : fine.to_host<float>()) EXPECT_EQ(v, 2.0f * static_cast<float>(workers()));
  }
  kv.barrier();
}

// A pushpull that reaches a shard before the push of the shard's own worker
// waits there to be received. Worker `ahead` pushpulls keys A and B, then
// initialises key C, all on a shard whose process is another worker; the
// other workers first sleep. Then they initialise C and wait for its value
// (C's init must not wait behind the held pushpulls), and pushpull B before
// A; a second round has no init between, so B's push releases A's held
// payload too: each payload lands in its own key (they differ in size).
TEST_P(KVStoreMpi, PushpullsAheadOfTheShardsOwnWorker) {
  if (workers() < 2) GTEST_SKIP() << "needs two workers";
  Engine& engine = *engine_;
  auto kv = KVStore::create(engine, "dist_sync", options());
  if (!kv.is_worker()) return;
  const int shard = shards() - 1;
  const int ahead = servers() == 0 && shard == 0 ? 1 : 0;
  const int a = key_on_shard(shard, shards(), 1700), b = key_on_shard(shard, shards(), a + 1);
  const int c = key_on_shard(shard, shards(), b + 1);
  const std::int64_t a_size = 1000, b_size = 700, c_size = 5;
  kv.init(a, Tensor::zeros(engine, {a_size}));
  kv.init(b, Tensor::zeros(engine, {b_size}));
  const auto sum_of = [&](int key, std::int64_t n, int round) {
    std::vector<double> sum(static_cast<std::size_t>(n), 0.0);
    for (int w = 0; w < workers(); ++w) {
      for (std::int64_t i = 0; i < n; ++i) sum[static_cast<std::size_t>(i)] += value_at(key, w, round, i);
    }
    return sum;
  };
  const auto value = [&](int key, std::int64_t n, int round) {
    return tensor_of(engine, n, DType::float32, Device::cpu(), key, kv.rank(), round);
  };
  for (int round = 1; round <= 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Tensor ta = value(a, a_size, round), tb = value(b, b_size, round);
    Tensor tc = Tensor::full(engine, {c_size}, -1.0);
    if (kv.rank() == ahead) {
      kv.pushpull(a, {ta}, {ta});
      kv.pushpull(b, {tb}, {tb});
      if (round == 1) kv.init(c, Tensor::full(engine, {c_size}, 3.0));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (round == 1) kv.init(c, Tensor::full(engine, {c_size}, 3.0));
      if (round == 1) kv.pull(c, {tc});
      engine.wait_to_read(tc.var());
      kv.pushpull(b, {tb}, {tb});
      engine.wait_to_read(tb.var());
      kv.pushpull(a, {ta}, {ta});
    }
    if (round == 1 && kv.rank() == ahead) kv.pull(c, {tc});
    EXPECT_EQ(host_of(ta), sum_of(a, a_size, round));
    EXPECT_EQ(host_of(tb), sum_of(b, b_size, round));
    if (round == 1) EXPECT_EQ(host_of(tc), std::vector<double>(c_size, 3.0));
  }
  kv.barrier();
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
