// Collectives through NCCL between the GPUs of one process, against a host
// reference: on one GPU through detail::nccl_world (NCCL with a single
// rank: ordering, completion, failed inputs, lifetimes), and on two or more
// GPUs through Communicator::world, which uses NCCL there by default. Every
// test skips, saying why, without the GPUs it needs or without NCCL.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <depengine/comm.h>
#include <depengine/cuda_memory.h>
#include <depengine/engine.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "tests/support/comm_values.h"

namespace depengine {
namespace {

bool says_nccl(const Communicator& comm) { return comm.describe().find("NCCL") != std::string::npos; }

// Tensor i of the call on GPU i.
std::vector<Tensor> inputs_on_gpus(Engine& engine, int gpus, std::int64_t n, DType dtype, int salt) {
  std::vector<Tensor> t;
  for (int g = 0; g < gpus; ++g) t.push_back(make_input(engine, g, n, dtype, Device::cuda(g), salt));
  return t;
}

// One GPU, NCCL with one rank: what it exchanges is trivial, how the engine
// runs it is not.
class NcclOneGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU here: NCCL's tests need one";
    comm_.emplace(detail::nccl_world(engine_));
    if (!says_nccl(*comm_)) GTEST_SKIP() << "depengine was built without NCCL: " << comm_->describe();
  }
  Engine engine_;
  std::optional<Communicator> comm_;
};

TEST_F(NcclOneGpu, AllreducesAreOrderedWithTheTensorsOperations) {
  const std::int64_t n = 1001;
  Tensor t = make_input(engine_, 0, n, DType::float32, Device::cuda(0));
  constexpr int kRounds = 20;
  for (int r = 0; r < kRounds; ++r) {
    comm_->allreduce({t}, r % 2 ? ReduceOp::mean : ReduceOp::sum);
    ops::scale(t, 2.0, t);  // on the GPU, after the allreduce, before the next one
  }
  const auto got = t.to_host<double>();
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(got[static_cast<std::size_t>(i)], value_at(0, i, 0) * (1 << kRounds)) << "element " << i;
  }
}

TEST_F(NcclOneGpu, EveryCollectiveOfEverySize) {
  for (std::int64_t n : {0, 1, 7, 1001, (1 << 20) + 3}) {
    for (DType dtype : {DType::float32, DType::float64}) {
      const std::string what = "n " + std::to_string(n) + ", " + std::string(dtype_name(dtype));
      Tensor a = make_input(engine_, 0, n, dtype, Device::cuda(0), 1);
      Tensor b = make_input(engine_, 0, n, dtype, Device::cuda(0), 2);
      Tensor gathered = Tensor::zeros(engine_, {n}, dtype, Device::cuda(0));
      Tensor scattered = Tensor::zeros(engine_, {n}, dtype, Device::cuda(0));
      comm_->allreduce({a});
      comm_->broadcast({b});
      comm_->allgather({a}, {gathered});
      comm_->reduce_scatter({b}, {scattered}, ReduceOp::mean);
      const auto got_a = a.to_host<double>(), got_b = b.to_host<double>();
      const auto got_gathered = gathered.to_host<double>(), got_scattered = scattered.to_host<double>();
      for (std::int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        ASSERT_EQ(got_a[k], value_at(0, i, 1)) << "allreduce, " << what;
        ASSERT_EQ(got_b[k], value_at(0, i, 2)) << "broadcast, " << what;
        ASSERT_EQ(got_gathered[k], value_at(0, i, 1)) << "allgather, " << what;
        ASSERT_EQ(got_scattered[k], value_at(0, i, 2)) << "reduce_scatter, " << what;
      }
    }
  }
}

TEST_F(NcclOneGpu, AFailedInputFailsTheCollectiveAndTheNextOneRuns) {
  Tensor t = make_input(engine_, 0, 100, DType::float32, Device::cuda(0));
  engine_.push([](RunContext&) { throw std::runtime_error("the gradient failed"); }, {}, {t.var()},
               {.name = "failing producer"});
  comm_->allreduce({t});
  try {
    t.to_host<float>();
    FAIL() << "the allreduce of a failed input did not fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the gradient failed"), std::string::npos) << e.what();
  }
  Tensor u = make_input(engine_, 0, 100, DType::float32, Device::cuda(0), 3);
  comm_->allreduce({u});
  EXPECT_EQ(u.to_host<double>()[5], value_at(0, 5, 3));
}

TEST_F(NcclOneGpu, DroppingTheCommunicatorAndTensorsWhileInFlightIsSafe) {
  std::vector<Tensor> kept;
  for (int r = 0; r < 50; ++r) {
    Tensor t = make_input(engine_, 0, 1 << 16, DType::float32, Device::cuda(0), r);
    comm_->allreduce({t});
    if (r % 10 == 0) kept.push_back(t);
  }
  comm_.reset();  // the operations in flight keep what they need
  engine_.wait_all();
  for (std::size_t j = 0; j < kept.size(); ++j) {
    EXPECT_EQ(kept[j].to_host<double>()[3], value_at(0, 3, static_cast<int>(j) * 10));
  }
}

// Two or more GPUs: the default world takes them to NCCL.
class NcclGpus : public ::testing::Test {
 protected:
  void SetUp() override {
    gpus_ = std::min(cuda_device_count(), 4);
    if (gpus_ < 2) GTEST_SKIP() << "needs two CUDA GPUs; this machine has " << cuda_device_count();
    comm_.emplace(Communicator::world(engine_));
    if (!says_nccl(*comm_)) GTEST_SKIP() << "depengine was built without NCCL: " << comm_->describe();
  }
  Engine engine_;
  std::optional<Communicator> comm_;
  int gpus_ = 0;
};

TEST_F(NcclGpus, AllreduceMatchesTheHostReference) {
  for (int gpus = 2; gpus <= gpus_; ++gpus) {
    for (std::int64_t n : {0, 1, 7, 1001, (1 << 20) + 3}) {
      for (DType dtype : {DType::float32, DType::float64}) {
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
          auto t = inputs_on_gpus(engine_, gpus, n, dtype, 4);
          comm_->allreduce(t, op);
          for (int g = 0; g < gpus; ++g) {
            const auto got = t[static_cast<std::size_t>(g)].to_host<double>();
            for (std::int64_t i = 0; i < n; ++i) {
              double sum = 0;
              for (int r = 0; r < gpus; ++r) sum += value_at(r, i, 4);
              // NCCL's mean divides the sum; the ring multiplies by 1/ranks.
              const double expected = op == ReduceOp::sum ? sum : sum / gpus;
              ASSERT_NEAR(got[static_cast<std::size_t>(i)], expected, 1e-6 * std::abs(expected))
                  << gpus << " GPUs, n " << n << ", GPU " << g << ", element " << i;
            }
          }
        }
      }
    }
  }
}

TEST_F(NcclGpus, BroadcastAllgatherAndReduceScatterMatchTheHostReference) {
  const int gpus = gpus_;
  const std::int64_t n = 1001;
  auto b = inputs_on_gpus(engine_, gpus, n, DType::float32, 5);
  auto a = inputs_on_gpus(engine_, gpus, n, DType::float32, 6);
  auto s = inputs_on_gpus(engine_, gpus, gpus * n, DType::float32, 7);
  std::vector<Tensor> gathered, scattered;
  for (int g = 0; g < gpus; ++g) {
    gathered.push_back(Tensor::zeros(engine_, {gpus * n}, DType::float32, Device::cuda(g)));
    scattered.push_back(Tensor::zeros(engine_, {n}, DType::float32, Device::cuda(g)));
  }
  comm_->broadcast(b);
  comm_->allgather(a, gathered);
  comm_->reduce_scatter(s, scattered);
  for (int g = 0; g < gpus; ++g) {
    const auto got_b = b[static_cast<std::size_t>(g)].to_host<double>();
    const auto got_g = gathered[static_cast<std::size_t>(g)].to_host<double>();
    const auto got_s = scattered[static_cast<std::size_t>(g)].to_host<double>();
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got_b[static_cast<std::size_t>(i)], value_at(0, i, 5)) << "broadcast, GPU " << g;
      double sum = 0;
      for (int r = 0; r < gpus; ++r) sum += value_at(r, g * n + i, 7);
      ASSERT_EQ(got_s[static_cast<std::size_t>(i)], sum) << "reduce_scatter, GPU " << g;
    }
    for (std::int64_t i = 0; i < gpus * n; ++i) {
      ASSERT_EQ(got_g[static_cast<std::size_t>(i)], value_at(static_cast<int>(i / n), i % n, 6))
          << "allgather, GPU " << g;
    }
  }
}

TEST_F(NcclGpus, WithNcclOffTheHostPathGivesTheSameSums) {
  Communicator host = Communicator::world(engine_, {.nccl = false});
  EXPECT_FALSE(says_nccl(host)) << host.describe();
  auto t = inputs_on_gpus(engine_, gpus_, 1001, DType::float64, 8);
  host.allreduce(t);
  const auto got = t[1].to_host<double>();
  for (std::int64_t i = 0; i < 1001; ++i) {
    double sum = 0;
    for (int r = 0; r < gpus_; ++r) sum += value_at(r, i, 8);
    ASSERT_EQ(got[static_cast<std::size_t>(i)], sum);
  }
}

// Without GPUs for it, NCCL takes no part, whatever the build.
TEST(NcclWithoutGpus, TheCommunicatorSaysNoNccl) {
  if (cuda_device_count() >= 2) GTEST_SKIP() << "this machine has GPUs for NCCL";
  Engine engine;
  const Communicator world = Communicator::world(engine);
  EXPECT_FALSE(says_nccl(world)) << world.describe();
  if (cuda_device_count() == 0) EXPECT_FALSE(says_nccl(detail::nccl_world(engine)));
}

}  // namespace
}  // namespace depengine
