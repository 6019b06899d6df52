// Tensor handles: creation, seeded random values, host access, copies
// between devices, and lifetime (storage released only after its last op).

#include <thread>

#include "tests/tensor_test_support.h"

namespace depengine::testing {
namespace {

namespace ops = depengine::ops;

TEST(TensorTest, CreationAndMetadata) {
  auto engine = make_engine();
  Tensor t = Tensor::full(*engine, {2, 3}, 1.5, DType::float64);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 48u);
  EXPECT_EQ(t.describe(), "float64[2, 3] on cpu");
  EXPECT_EQ(t.to_host<float>(), std::vector<float>(6, 1.5f));
  EXPECT_EQ(Tensor::zeros(*engine, {}).item<double>(), 0.0);
  EXPECT_EQ(Tensor::zeros(*engine, {4, 0}).to_host<float>().size(), 0u);
  std::vector<std::int32_t> labels = {3, 1, 4};
  EXPECT_EQ(Tensor::from_host(*engine, std::span<const std::int32_t>(labels), {3}).to_host<std::int32_t>(), labels);
}

TEST(TensorTest, SeededValuesAreTheSameOnEveryDeviceAndEngine) {
  auto engine = make_engine();
  auto naive = make_engine(EngineKind::Naive);
  const std::vector<double> u = Tensor::uniform(*engine, {100}, 7, -1, 1, DType::float64).to_host<double>();
  EXPECT_EQ(Tensor::uniform(*engine, {100}, 7, -1, 1, DType::float64, Device::emulated(1)).to_host<double>(), u);
  EXPECT_EQ(Tensor::uniform(*naive, {100}, 7, -1, 1, DType::float64).to_host<double>(), u);
  EXPECT_NE(Tensor::uniform(*engine, {100}, 8, -1, 1, DType::float64).to_host<double>(), u);
  for (double v : u) {
    EXPECT_GE(v, -1.0);
    EXPECT_LT(v, 1.0);
  }
  const std::vector<double> n = Tensor::normal(*engine, {4000}, 3, 2.0, 0.5, DType::float64).to_host<double>();
  double mean = 0, var = 0;
  for (double v : n) mean += v / n.size();
  for (double v : n) var += (v - mean) * (v - mean) / n.size();
  EXPECT_NEAR(mean, 2.0, 0.05);
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.05);
  EXPECT_EQ(Tensor::normal(*engine, {4000}, 3, 2.0, 0.5, DType::float64, Device::emulated(0)).to_host<double>(), n);
}

TEST(TensorTest, CopyToEveryDevicePairKeepsValues) {
  auto engine = make_engine();
  const std::vector<float> v = Tensor::uniform(*engine, {3, 5}, 11).to_host<float>();
  const Device devices[] = {Device::cpu(), Device::emulated(0), Device::emulated(1)};
  for (Device from : devices) {
    Tensor src = Tensor::from_host(*engine, std::span<const float>(v), {3, 5}, from);
    for (Device to : devices) {
      Tensor dst = src.copy_to(to);
      EXPECT_EQ(dst.device(), to);
      EXPECT_EQ(dst.to_host<float>(), v) << from.to_string() << " -> " << to.to_string();
    }
  }
}

// ops::copy into an existing tensor on another device: the values arrive,
// a later op on the destination's device sees them, and a dtype conversion
// between devices (or another element count) is refused at the call.
TEST(TensorTest, OpsCopyBetweenDevicesWritesTheDestination) {
  auto engine = make_engine();
  const std::vector<float> v = Tensor::uniform(*engine, {6}, 5).to_host<float>();
  const Device devices[] = {Device::cpu(), Device::emulated(0), Device::emulated(1)};
  for (Device from : devices) {
    Tensor src = Tensor::from_host(*engine, std::span<const float>(v), {6}, from);
    for (Device to : devices) {
      Tensor dst = Tensor::zeros(*engine, {2, 3}, DType::float32, to);
      ops::copy(src, dst);
      ops::scale(dst, 2.0, dst);
      std::vector<float> want = v;
      for (float& x : want) x *= 2.0f;
      EXPECT_EQ(dst.to_host<float>(), want) << from.to_string() << " -> " << to.to_string();
    }
  }
  Tensor src = Tensor::zeros(*engine, {6});
  EXPECT_THROW(ops::copy(src, Tensor::zeros(*engine, {6}, DType::float64, Device::emulated(0))), std::invalid_argument);
  EXPECT_THROW(ops::copy(src, Tensor::zeros(*engine, {5}, DType::float32, Device::emulated(0))), std::invalid_argument);
}

TEST(TensorTest, ReshapeSharesStorageAndOrdering) {
  auto engine = make_engine();
  Tensor m = Tensor::zeros(*engine, {2, 3});
  Tensor flat = m.reshape({6});
  EXPECT_EQ(flat.var(), m.var());
  ops::fill(flat, 4.0);
  EXPECT_EQ(m.to_host<float>(), std::vector<float>(6, 4.0f));
}

TEST(TensorTest, CopiesOfAHandleShareStorage) {
  auto engine = make_engine();
  Tensor a = Tensor::zeros(*engine, {4});
  Tensor b = a;
  ops::fill(b, 2.0);
  EXPECT_EQ(a.to_host<float>(), std::vector<float>(4, 2.0f));
}

// The last handle dropped while a long op still writes: the buffer must stay
// alive until the op is done. (Under ASan a use-after-free would be reported.)
TEST(TensorLifetimeTest, DroppedWhileOpsAreInFlight) {
  for (Device device : test_devices()) {
    auto engine = make_engine();
    std::atomic<bool> release{false};
    Tensor keep = Tensor::zeros(*engine, {1000}, DType::float32, device);
    {
      Tensor doomed = Tensor::zeros(*engine, {1000}, DType::float32, device);
      // Holds the doomed tensor's variable until `release`.
      engine->push([&](RunContext&) { while (!release.load()) std::this_thread::yield(); }, {}, {doomed.var()},
                   {.device = device});
      ops::axpy(1.0, doomed, keep);  // reads doomed after the blocker
      ops::fill(doomed, 5.0);
    }  // last handle gone: deletion is queued behind the ops above
    release = true;
    EXPECT_EQ(keep.to_host<float>(), std::vector<float>(1000, 0.0f));
    engine->wait_all();
  }
}

TEST(TensorLifetimeTest, CopiedAcrossDevicesAndDropped) {
  auto engine = make_engine();
  std::vector<Tensor> results;
  for (int i = 0; i < 20; ++i) {
    Tensor src = Tensor::full(*engine, {256}, i, DType::float32, Device::emulated(i % 2));
    results.push_back(src.copy_to(Device::emulated(1 - i % 2)).copy_to(Device::cpu()));
  }  // every source and intermediate dropped with its copies in flight
  for (int i = 0; i < 20; ++i) EXPECT_EQ(results[i].to_host<float>(), std::vector<float>(256, float(i)));
}

// Several frontend threads update shared tensors in place. Every update adds
// an exact small integer, so the order of the pushes does not change the
// result, and it must equal the naive engine's.
TEST(TensorLifetimeTest, InPlaceUpdatesFromSeveralThreadsMatchTheNaiveEngine) {
  auto run = [](EngineKind kind) {
    auto engine = make_engine(kind);
    Tensor acc = Tensor::zeros(*engine, {64}, DType::float64);
    Tensor acc_dev = Tensor::zeros(*engine, {64}, DType::float64, Device::emulated(0));
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 50; ++i) {
          Tensor step = Tensor::full(*engine, {64}, t + 1, DType::float64);
          ops::axpy(1.0, step, acc);
          ops::axpy(2.0, step.copy_to(Device::emulated(0)), acc_dev);
          ops::scale(acc, 1.0, acc);
        }
      });
    }
    for (auto& th : threads) th.join();
    std::vector<double> out = acc.to_host<double>();
    std::vector<double> dev = acc_dev.to_host<double>();
    out.insert(out.end(), dev.begin(), dev.end());
    return out;
  };
  const std::vector<double> threaded = run(EngineKind::Threaded);
  EXPECT_EQ(threaded, run(EngineKind::Naive));
  EXPECT_EQ(threaded[0], 50.0 * (1 + 2 + 3));
  EXPECT_EQ(threaded[64], 100.0 * (1 + 2 + 3));
}

TEST(TensorLifetimeTest, FailedWriteReachesToHost) {
  auto engine = make_engine();
  Tensor t = Tensor::zeros(*engine, {4});
  engine->push([](RunContext&) { throw std::runtime_error("boom"); }, {}, {t.var()});
  Tensor copy = ops::scale(t, 2.0);  // skipped: its input failed
  EXPECT_THROW(copy.to_host<float>(), std::runtime_error);
  EXPECT_THROW(t.to_host<float>(), std::runtime_error);
}

}  // namespace
}  // namespace depengine::testing
