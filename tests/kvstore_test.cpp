// The KVStore in one process: "local" and "device" (and the dist types,
// which run as "local" in a world of one) against a host reference, the
// updaters and SGD, and the bad input each call rejects. Values are small
// integers, so sums compare exactly.

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <depengine/cuda_memory.h>
#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <depengine/kvstore.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "tests/support/engine_with_devices.h"
#include "tests/support/kvstore_values.h"

namespace depengine {
namespace {

class KVStoreLocal : public ::testing::TestWithParam<std::string> {};

// `call` throws std::invalid_argument whose message contains `text`.
template <class Call>
void expect_invalid(Call call, const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected one mentioning '" << text << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

// Random keys and sizes (0, 1, odd, large), pushes from 3 devices, pulls
// onto every device, several rounds with priorities; no updater: the store
// holds the last merged sum.
TEST_P(KVStoreLocal, PushSumsTheDevicesAndPullCopiesBack) {
  auto engine = engine_with_devices(3);
  auto kv = KVStore::create(*engine, GetParam());
  EXPECT_EQ(kv.type(), GetParam());
  EXPECT_TRUE(kv.is_worker());
  EXPECT_EQ(kv.num_workers(), 1);
  std::mt19937 rng(7);
  const std::vector<std::int64_t> sizes = {0, 1, 17, 1000, 200001};
  std::vector<int> keys;
  std::vector<DType> dtypes;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    keys.push_back(static_cast<int>(rng() % 100000));
    dtypes.push_back(k % 2 ? DType::float64 : DType::float32);
  }
  for (std::size_t k = 0; k < keys.size(); ++k) {
    kv.init(keys[k], tensor_of(*engine, sizes[k], dtypes[k], Device::emulated(0), keys[k], 9, 0));
  }
  for (std::size_t k = 0; k < keys.size(); ++k) {
    std::vector<Tensor> first(3);
    for (int d = 0; d < 3; ++d) first[d] = Tensor::zeros(*engine, {sizes[k]}, dtypes[k], Device::emulated(d));
    kv.pull(keys[k], first);
    for (int d = 0; d < 3; ++d) {
      const std::vector<double> got = host_of(first[static_cast<std::size_t>(d)]);
      for (std::int64_t i = 0; i < sizes[k]; ++i) ASSERT_EQ(got[i], value_at(keys[k], 9, 0, i));
    }
  }
  for (int round = 1; round <= 3; ++round) {
    std::vector<std::vector<Tensor>> outs(keys.size());
    for (std::size_t k = 0; k < keys.size(); ++k) {
      std::vector<Tensor> values;
      for (int d = 0; d < 3; ++d) {
        values.push_back(tensor_of(*engine, sizes[k], dtypes[k], Device::emulated(d), keys[k], d, round));
        outs[k].push_back(Tensor::zeros(*engine, {sizes[k]}, dtypes[k], Device::emulated(d)));
      }
      const int priority = static_cast<int>(rng() % 5);
      if (k % 2) {
        kv.pushpull(keys[k], values, outs[k], priority);
      } else {
        kv.push(keys[k], values, priority);
        kv.pull(keys[k], outs[k], priority);
      }
    }
    for (std::size_t k = 0; k < keys.size(); ++k) {
      for (const Tensor& out : outs[k]) {
        const std::vector<double> got = host_of(out);
        for (std::int64_t i = 0; i < sizes[k]; ++i) {
          const double want = value_at(keys[k], 0, round, i) + value_at(keys[k], 1, round, i) +
                              value_at(keys[k], 2, round, i);
          ASSERT_EQ(got[static_cast<std::size_t>(i)], want) << "key " << keys[k] << " element " << i;
        }
      }
    }
  }
}

// The naive engine: each operation runs as it is pushed.
TEST_P(KVStoreLocal, NaiveEngine) {
  auto engine = engine_with_devices(2, EngineKind::Naive);
  auto kv = KVStore::create(*engine, GetParam());
  kv.init(4, Tensor::zeros(*engine, {9}, DType::float64));
  std::vector<Tensor> outs = {Tensor::empty(*engine, {9}, DType::float64, Device::emulated(0)),
                              Tensor::empty(*engine, {9}, DType::float64, Device::emulated(1))};
  kv.pushpull(4,
              {tensor_of(*engine, 9, DType::float64, Device::emulated(0), 4, 0, 1),
               tensor_of(*engine, 9, DType::float64, Device::emulated(1), 4, 1, 1)},
              outs);
  for (const Tensor& out : outs) {
    const std::vector<double> got = out.to_host<double>();
    for (std::int64_t i = 0; i < 9; ++i) EXPECT_EQ(got[i], value_at(4, 0, 1, i) + value_at(4, 1, 1, i));
  }
}

// The updater runs where the value is stored, once per push, on the merged sum.
TEST_P(KVStoreLocal, UpdaterSeesTheMergedSum) {
  auto engine = engine_with_devices(2);
  auto kv = KVStore::create(*engine, GetParam());
  int calls = 0;
  kv.set_updater([&calls](int key, const Tensor& merged, Tensor& stored) {
    EXPECT_EQ(key, 5);
    ++calls;
    ops::axpy(0.5, merged, stored);  // stored += merged / 2
  });
  kv.init(5, Tensor::full(*engine, {33}, 10.0));
  for (int round = 0; round < 4; ++round) {
    kv.push(5, {Tensor::full(*engine, {33}, 1.0, DType::float32, Device::emulated(0)),
                Tensor::full(*engine, {33}, 3.0, DType::float32, Device::emulated(1))});
  }
  Tensor out = Tensor::empty(*engine, {33});
  kv.pull(5, {out});
  for (float v : out.to_host<float>()) EXPECT_EQ(v, 10.0f + 4 * 2.0f);
  EXPECT_EQ(calls, 4);
}

// SGD with momentum and weight decay against the formula of kvstore.h.
TEST_P(KVStoreLocal, OptimizerIsSgdWithMomentum) {
  auto engine = engine_with_devices(2);
  auto kv = KVStore::create(*engine, GetParam());
  const SGDOptimizer sgd{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 0.01, .rescale_grad = 0.5};
  kv.set_optimizer(sgd);
  const std::int64_t n = 21;
  kv.init(1, tensor_of(*engine, n, DType::float64, Device::cpu(), 1, 0, 0));
  std::vector<double> w(n), v(n, 0.0);
  for (std::int64_t i = 0; i < n; ++i) w[i] = value_at(1, 0, 0, i);
  Tensor out = Tensor::empty(*engine, {n}, DType::float64);
  for (int round = 1; round <= 5; ++round) {
    kv.pushpull(1,
                {tensor_of(*engine, n, DType::float64, Device::emulated(0), 1, 0, round),
                 tensor_of(*engine, n, DType::float64, Device::emulated(1), 1, 1, round)},
                {out});
    for (std::int64_t i = 0; i < n; ++i) {
      const double g = sgd.rescale_grad * (value_at(1, 0, round, i) + value_at(1, 1, round, i)) + sgd.weight_decay * w[i];
      v[i] = sgd.momentum * v[i] + g;
      w[i] -= sgd.learning_rate * v[i];
    }
  }
  const std::vector<double> got = out.to_host<double>();
  for (std::int64_t i = 0; i < n; ++i) EXPECT_NEAR(got[i], w[i], 1e-9 * (1 + std::abs(w[i])));
}

TEST_P(KVStoreLocal, BatchedFormsTakeListsOfKeys) {
  auto engine = engine_with_devices(1);
  auto kv = KVStore::create(*engine, GetParam());
  kv.init({1, 2}, {Tensor::zeros(*engine, {3}), Tensor::zeros(*engine, {4}, DType::float64)});
  kv.push({1, 2}, {{Tensor::full(*engine, {3}, 2.0)}, {Tensor::full(*engine, {4}, 5.0, DType::float64)}});
  Tensor a = Tensor::empty(*engine, {3}), b = Tensor::empty(*engine, {4}, DType::float64);
  kv.pull({1, 2}, {{a}, {b}});
  for (float x : a.to_host<float>()) EXPECT_EQ(x, 2.0f);
  for (double x : b.to_host<double>()) EXPECT_EQ(x, 5.0);
}

// Each bad input throws at the call, naming the problem, and pushes nothing.
TEST_P(KVStoreLocal, BadInputThrowsAtTheCall) {
  auto engine = engine_with_devices(1);
  auto kv = KVStore::create(*engine, GetParam());
  kv.init(1, Tensor::zeros(*engine, {4}));
  Tensor out = Tensor::full(*engine, {4}, 7.0);
  expect_invalid([&] { kv.push(2, {Tensor::zeros(*engine, {4})}); }, "never initialised");
  expect_invalid([&] { kv.pull(2, {out}); }, "never initialised");
  expect_invalid([&] { kv.push(1, {Tensor::zeros(*engine, {5})}); }, "does not match key 1");
  expect_invalid([&] { kv.push(1, {Tensor::zeros(*engine, {4}, DType::float64)}); }, "does not match key 1");
  expect_invalid([&] { kv.pull(1, {Tensor::zeros(*engine, {2, 2})}); }, "does not match key 1");
  expect_invalid([&] { kv.init(1, Tensor::zeros(*engine, {5})); }, "was initialised as float32 [4]");
  expect_invalid([&] { kv.init(3, Tensor::zeros(*engine, {2}, DType::int32)); }, "float32 or float64");
  expect_invalid([&] { kv.push(1, {}); }, "no values");
  expect_invalid([&] { kv.push(1, {Tensor()}); }, "null tensor");
  expect_invalid([&] { kv.push(1, {out, out}); }, "given twice");
  expect_invalid([&] { kv.push({1, 1}, {{out}}); }, "2 keys but 1 lists");
  Engine other;
  expect_invalid([&] { kv.push(1, {Tensor::zeros(other, {4})}); }, "another engine");
  expect_invalid([&] { KVStore::create(*engine, "dist_nothing"); }, "unknown type");
  expect_invalid([&] { KVStore::create(*engine, GetParam(), {.part_bytes = 0}); }, "part_bytes");
  // Nothing was pushed: the output still holds its value, key 3 is unknown.
  for (float x : out.to_host<float>()) EXPECT_EQ(x, 7.0f);
  expect_invalid([&] { kv.pull(3, {out}); }, "never initialised");
  // Initialising again with the same shape stores the new value.
  kv.init(1, Tensor::full(*engine, {4}, 2.0));
  kv.pull(1, {out});
  for (float x : out.to_host<float>()) EXPECT_EQ(x, 2.0f);
}

// String keys: each name stands for KVStore::key_of(name), a hash that is
// the same in every build and process; the updater gets that int; the
// single and batched forms; a name never initialised, and a name and an
// int claiming the same int, throw at the call.
TEST_P(KVStoreLocal, StringKeys) {
  EXPECT_EQ(KVStore::key_of("w"), 694283802);
  EXPECT_EQ(KVStore::key_of("layer0.weight"), 10206903);
  EXPECT_EQ(KVStore::key_of(""), 1339080641);
  auto engine = engine_with_devices(2);
  auto kv = KVStore::create(*engine, GetParam());
  std::vector<int> updated;
  kv.set_updater([&updated](int key, const Tensor& merged, Tensor& stored) {
    updated.push_back(key);
    ops::axpy(1.0, merged, stored);
  });
  kv.init("w", Tensor::full(*engine, {4}, 1.0));
  kv.init(std::vector<std::string>{"a", "b"}, {Tensor::zeros(*engine, {3}), Tensor::zeros(*engine, {2}, DType::float64)});
  kv.push("w", {Tensor::full(*engine, {4}, 2.0, DType::float32, Device::emulated(0)),
                Tensor::full(*engine, {4}, 3.0, DType::float32, Device::emulated(1))});
  Tensor w = Tensor::empty(*engine, {4});
  kv.pull("w", {w});
  for (float x : w.to_host<float>()) EXPECT_EQ(x, 6.0f);
  // The int it stands for is the same key.
  Tensor same = Tensor::empty(*engine, {4});
  kv.pull(KVStore::key_of("w"), {same});
  for (float x : same.to_host<float>()) EXPECT_EQ(x, 6.0f);
  kv.push(std::vector<std::string>{"a", "b"},
          {{Tensor::full(*engine, {3}, 4.0)}, {Tensor::full(*engine, {2}, 5.0, DType::float64)}});
  Tensor a = Tensor::empty(*engine, {3}), b = Tensor::empty(*engine, {2}, DType::float64);
  kv.pull(std::vector<std::string>{"a", "b"}, {{a}, {b}});
  for (float x : a.to_host<float>()) EXPECT_EQ(x, 4.0f);
  for (double x : b.to_host<double>()) EXPECT_EQ(x, 5.0);
  kv.pushpull("a", {Tensor::full(*engine, {3}, 1.0)}, {a});
  for (float x : a.to_host<float>()) EXPECT_EQ(x, 5.0f);
  EXPECT_EQ(updated, (std::vector<int>{KVStore::key_of("w"), KVStore::key_of("a"), KVStore::key_of("b"),
                                       KVStore::key_of("a")}));

  expect_invalid([&] { kv.pull("never", {w}); }, "key 'never' was never initialised");
  expect_invalid([&] { kv.push("never", {w}); }, "key 'never' was never initialised");
  expect_invalid([&] { kv.pushpull("never", {w}, {w}); }, "key 'never' was never initialised");
  expect_invalid([&] { kv.push("w", {Tensor::zeros(*engine, {5})}); }, "does not match key 'w'");
  expect_invalid([&] { kv.init("w", Tensor::zeros(*engine, {5})); }, "key 'w' was initialised as float32 [4]");
  expect_invalid([&] { kv.init(KVStore::key_of("w"), Tensor::zeros(*engine, {4})); }, "which key 'w' already holds");
  kv.init(KVStore::key_of("x"), Tensor::zeros(*engine, {1}));
  expect_invalid([&] { kv.init("x", Tensor::zeros(*engine, {1})); }, "which the int key");
  expect_invalid([&] { kv.pull("x", {Tensor::empty(*engine, {1})}); }, "key 'x' was never initialised");
  expect_invalid([&] { kv.init(std::vector<std::string>{"c", "c"}, {w, w}); }, "key 'c' is given twice");
  // Nothing was pushed by the calls that threw.
  for (float x : w.to_host<float>()) EXPECT_EQ(x, 6.0f);
}

// On a GPU: CUDA values and outputs go through host copies (pinned
// memory), beside a CPU one; init from a CUDA tensor, push + pull, and a
// pushpull into the pushed CUDA tensor itself.
TEST_P(KVStoreLocal, CudaTensorsThroughHostStandIns) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "needs a CUDA GPU (none is visible)";
  Engine engine;
  auto kv = KVStore::create(engine, GetParam());
  const int key = 5;
  const std::int64_t n = 1000;
  kv.init(key, tensor_of(engine, n, DType::float32, Device::cuda(0), key, 9, 0));
  Tensor out = Tensor::zeros(engine, {n}, DType::float32, Device::cuda(0));
  kv.pull(key, {out});
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(host_of(out)[static_cast<std::size_t>(i)], value_at(key, 9, 0, i));
  Tensor on_gpu = tensor_of(engine, n, DType::float32, Device::cuda(0), key, 0, 1);
  kv.push(key, {on_gpu, tensor_of(engine, n, DType::float32, Device::cpu(), key, 1, 1)});
  kv.pull(key, {out});
  kv.pushpull(key, {on_gpu}, {on_gpu});
  const std::vector<double> pulled = host_of(out), pushpulled = host_of(on_gpu);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    ASSERT_EQ(pulled[at], value_at(key, 0, 1, i) + value_at(key, 1, 1, i)) << i;
    ASSERT_EQ(pushpulled[at], value_at(key, 0, 1, i)) << i;  // the store holds the last merged push
  }
}

INSTANTIATE_TEST_SUITE_P(Types, KVStoreLocal, ::testing::Values("local", "device", "dist_sync", "dist_async"));

TEST(KVStore, DistTypesInOneProcessRunAsLocal) {
  auto engine = engine_with_devices(0);
  auto kv = KVStore::create(*engine, "dist_sync");
  EXPECT_EQ(kv.rank(), 0);
  EXPECT_EQ(kv.num_workers(), 1);
  EXPECT_NE(kv.describe().find("one process"), std::string::npos) << kv.describe();
  EXPECT_THROW(KVStore::create(*engine, "dist_sync", {.servers = 1}), std::invalid_argument);
  EXPECT_THROW(KVStore::create(*engine, "local", {.servers = 1}), std::invalid_argument);
  kv.barrier();
}

}  // namespace
}  // namespace depengine
