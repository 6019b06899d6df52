// Collectives inside one process: 1 to 4 local tensors on emulated devices
// (and the CPU), against a host reference; ordering against the tensors'
// other operations; misuse and failed inputs. Values are integers, so that
// sums are exact in any order and results are compared bit for bit.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <depengine/comm.h>
#include <depengine/cuda_memory.h>
#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <depengine/ops.h>
#include <depengine/profiler.h>
#include <depengine/tensor.h>

#include "tests/support/comm_values.h"
#include "tests/support/engine_with_devices.h"

namespace depengine {
namespace {

// Two compute streams per device: steps of different chunks may overlap.
std::unique_ptr<Engine> two_stream_engine(int devices, EngineKind kind = EngineKind::Threaded) {
  return engine_with_devices(devices, kind, 2);
}

bool under_mpi_launcher() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK"); }

TEST(Comm, WorldOfOneProcessSaysWhy) {
  if (under_mpi_launcher()) GTEST_SKIP() << "started by an MPI launcher: the world is not this process alone";
  Engine engine;
  Communicator comm = Communicator::world(engine);
  EXPECT_EQ(comm.process_count(), 1);
  EXPECT_EQ(comm.process_rank(), 0);
  EXPECT_NE(comm.describe().find("one process"), std::string::npos) << comm.describe();
  comm.barrier();  // alone: returns at once
}

TEST(Comm, OptionsOfZeroBytesAreRejected) {
  Engine engine;
  EXPECT_THROW(Communicator::world(engine, {.bucket_bytes = 0}), std::invalid_argument);
  EXPECT_THROW(Communicator::world(engine, {.piece_bytes = 0}), std::invalid_argument);
}

using AllreduceParam = std::tuple<int, std::int64_t, DType, ReduceOp>;

class AllreduceOnDevices : public ::testing::TestWithParam<AllreduceParam> {};

TEST_P(AllreduceOnDevices, MatchesTheHostReference) {
  const auto [devices, n, dtype, op] = GetParam();
  auto engine = two_stream_engine(devices);
  Communicator comm = Communicator::world(*engine);
  std::vector<Tensor> tensors;
  for (int d = 0; d < devices; ++d) tensors.push_back(make_input(*engine, d, n, dtype, Device::emulated(d)));
  comm.allreduce(tensors, op);
  for (int d = 0; d < devices; ++d) {
    const std::vector<double> got = tensors[static_cast<std::size_t>(d)].to_host<double>();
    ASSERT_EQ(static_cast<std::int64_t>(got.size()), n);
    for (std::int64_t i = 0; i < n; ++i) {
      double sum = 0;
      for (int r = 0; r < devices; ++r) sum += value_at(r, i, 0);
      ASSERT_EQ(got[static_cast<std::size_t>(i)], reduced(sum, op, devices, dtype))
          << "device " << d << " element " << i;
    }
  }
}

std::string allreduce_param_name(const ::testing::TestParamInfo<AllreduceParam>& info) {
  const int devices = std::get<0>(info.param);
  const std::int64_t n = std::get<1>(info.param);
  const DType dtype = std::get<2>(info.param);
  const ReduceOp op = std::get<3>(info.param);
  return std::to_string(devices) + "dev_n" + std::to_string(n) + "_" + std::string(dtype_name(dtype)) + "_" +
         (op == ReduceOp::sum ? "sum" : "mean");
}

INSTANTIATE_TEST_SUITE_P(Sizes, AllreduceOnDevices,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values<std::int64_t>(0, 1, 2, 7, 13, 100003),
                                            ::testing::Values(DType::float32, DType::float64),
                                            ::testing::Values(ReduceOp::sum, ReduceOp::mean)),
                         allreduce_param_name);

TEST(Comm, AllreduceMixesCpuAndEmulatedTensors) {
  auto engine = two_stream_engine(2);
  Communicator comm = Communicator::world(*engine);
  std::vector<Tensor> t = {make_input(*engine, 0, 11, DType::float32, Device::cpu()),
                           make_input(*engine, 1, 11, DType::float32, Device::emulated(0)),
                           make_input(*engine, 2, 11, DType::float32, Device::emulated(1))};
  comm.allreduce(t);
  for (const Tensor& x : t) {
    const auto got = x.to_host<double>();
    for (std::int64_t i = 0; i < 11; ++i) {
      EXPECT_EQ(got[static_cast<std::size_t>(i)], value_at(0, i, 0) + value_at(1, i, 0) + value_at(2, i, 0));
    }
  }
}

// One allreduce of `ranks` CPU tensors on an engine of `workers`: matches
// the host reference; returns how many operations it ran (-1 without the
// profiler).
long allreduce_cpu_tensors(int workers, int ranks, std::int64_t n, DType dtype, ReduceOp op) {
  EngineOptions options;
  options.cpu_threads = workers;
  Engine engine(options);
  Communicator comm = Communicator::world(engine);
  std::vector<Tensor> t;
  for (int r = 0; r < ranks; ++r) t.push_back(make_input(engine, r, n, dtype, Device::cpu(), ranks));
  Profiler profiler(engine);
  if (Profiler::available()) profiler.start();
  comm.allreduce(t, op, {.name = "grads"});
  engine.wait_all();
  long steps = -1;
  if (Profiler::available()) {
    profiler.stop();
    const auto ops = profiler.ops();
    steps = std::count_if(ops.begin(), ops.end(), [](const ProfiledOp& o) { return o.name == "grads"; });
  }
  for (int r = 0; r < ranks; ++r) {
    const auto got = t[static_cast<std::size_t>(r)].to_host<double>();
    for (std::int64_t i = 0; i < n; ++i) {
      double sum = 0;
      for (int q = 0; q < ranks; ++q) sum += value_at(q, i, ranks);
      const double expected = reduced(sum, op, ranks, dtype), value = got[static_cast<std::size_t>(i)];
      if (value != expected) {
        ADD_FAILURE() << "tensor " << r << ", element " << i << ": " << value << ", expected " << expected;
        return steps;
      }
    }
  }
  return steps;
}

// CPU tensors of at most 64 KiB (of any size, with one CPU worker) are
// summed by one operation instead of the ring's chunk steps; larger ones
// take the ring. Both match the reference.
TEST(Comm, SmallCpuTensorsAllreduceInOneOperation) {
  for (int workers : {1, 2}) {
    for (int ranks = 2; ranks <= 4; ++ranks) {
      for (std::int64_t n : {0, 7, 8192, 16384, 16385}) {
        for (DType dtype : {DType::float32, DType::float64}) {
          for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
            SCOPED_TRACE(std::to_string(workers) + " workers, " + std::to_string(ranks) + " ranks, n " +
                         std::to_string(n) + ", " + std::string(dtype_name(dtype)));
            const long steps = allreduce_cpu_tensors(workers, ranks, n, dtype, op);
            if (steps < 0) continue;  // built without the profiler
            const bool small = n * static_cast<std::int64_t>(dtype_size(dtype)) <= (64 << 10);
            if (small || workers == 1) EXPECT_EQ(steps, 1);
            else EXPECT_GT(steps, ranks);
          }
        }
      }
    }
  }
}

// The one operation gives the ring's bits: on values whose sums round, 2-4
// tensors past 64 KiB summed by one operation (one worker) and by the ring
// (two workers) agree bit for bit.
TEST(Comm, OneOperationGivesTheRingsBits) {
  for (int ranks = 2; ranks <= 4; ++ranks) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
      const std::int64_t n = 16385;
      std::vector<std::vector<float>> results;
      for (int workers : {1, 2}) {
        EngineOptions options;
        options.cpu_threads = workers;
        Engine engine(options);
        Communicator comm = Communicator::world(engine);
        std::vector<Tensor> t;
        for (int r = 0; r < ranks; ++r) {
          std::vector<float> v(static_cast<std::size_t>(n));
          for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = 1.0f / static_cast<float>(3 + i % 17 + r);
          t.push_back(Tensor::from_host(engine, std::span<const float>(v), {n}));
        }
        comm.allreduce(t, op);
        for (const Tensor& x : t) results.push_back(x.to_host<float>());
      }
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(results[static_cast<std::size_t>(r)], results[static_cast<std::size_t>(ranks + r)])
            << ranks << " ranks, tensor " << r;
      }
    }
  }
}

TEST(Comm, AllreduceRunsUnderTheNaiveEngine) {
  auto engine = two_stream_engine(3, EngineKind::Naive);
  Communicator comm = Communicator::world(*engine);
  std::vector<Tensor> t;
  for (int d = 0; d < 3; ++d) t.push_back(make_input(*engine, d, 10, DType::float64, Device::emulated(d)));
  comm.allreduce(t, ReduceOp::sum);
  const auto got = t[2].to_host<double>();
  for (std::int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(got[static_cast<std::size_t>(i)], value_at(0, i, 0) + value_at(1, i, 0) + value_at(2, i, 0));
  }
}

// The collective waits for the writes pushed before it (a slow producer),
// earlier readers see the value before it, later readers the reduced value.
TEST(Comm, AllreduceIsOrderedWithTheTensorsOtherOperations) {
  auto engine = two_stream_engine(2);
  Communicator comm = Communicator::world(*engine);
  Tensor a = Tensor::zeros(*engine, {1000}, DType::float32, Device::emulated(0));
  Tensor b = Tensor::full(*engine, {1000}, 2.0, DType::float32, Device::emulated(1));
  std::vector<float> seen_before, seen_after;
  engine->push(
      [p = static_cast<float*>(a.data())](RunContext&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        for (int i = 0; i < 1000; ++i) p[i] = 5.0f;
      },
      {}, {a.var()}, {.name = "slow producer"});
  engine->push(
      [&seen_before, p = static_cast<const float*>(b.data())](RunContext&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        seen_before.assign(p, p + 1000);
      },
      {b.var()}, {}, {.name = "earlier reader"});
  comm.allreduce({a, b});
  engine->push([&seen_after, p = static_cast<const float*>(b.data())](RunContext&) { seen_after.assign(p, p + 1000); },
               {b.var()}, {}, {.name = "later reader"});
  engine->wait_all();
  ASSERT_EQ(seen_before.size(), 1000u);
  ASSERT_EQ(seen_after.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(seen_before[static_cast<std::size_t>(i)], 2.0f);
    ASSERT_EQ(seen_after[static_cast<std::size_t>(i)], 7.0f);
  }
  EXPECT_EQ(a.to_host<float>()[999], 7.0f);
}

TEST(Comm, ManyAllreducesInARowAccumulate) {
  auto engine = two_stream_engine(2);
  Communicator comm = Communicator::world(*engine);
  Tensor a = Tensor::full(*engine, {33}, 1.0, DType::float64, Device::emulated(0));
  Tensor b = Tensor::full(*engine, {33}, 1.0, DType::float64, Device::emulated(1));
  for (int k = 0; k < 10; ++k) comm.allreduce({a, b}, ReduceOp::sum, {.priority = k % 3});
  for (double v : b.to_host<double>()) EXPECT_EQ(v, 1024.0);
}

TEST(Comm, BroadcastCopiesLocalTensorZeroEverywhere) {
  for (int devices = 1; devices <= 4; ++devices) {
    auto engine = two_stream_engine(devices);
    Communicator comm = Communicator::world(*engine);
    std::vector<Tensor> t;
    for (int d = 0; d < devices; ++d) t.push_back(make_input(*engine, d, 9, DType::float32, Device::emulated(d)));
    comm.broadcast(t, 0);
    for (const Tensor& x : t) {
      const auto got = x.to_host<double>();
      for (std::int64_t i = 0; i < 9; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], value_at(0, i, 0));
    }
  }
}

TEST(Comm, AllgatherConcatenatesInRankOrder) {
  for (int devices = 1; devices <= 4; ++devices) {
    for (std::int64_t n : {0, 1, 5}) {
      auto engine = two_stream_engine(devices);
      Communicator comm = Communicator::world(*engine);
      std::vector<Tensor> in, out;
      for (int d = 0; d < devices; ++d) {
        in.push_back(make_input(*engine, d, n, DType::float64, Device::emulated(d)));
        out.push_back(Tensor::zeros(*engine, {devices, n}, DType::float64, Device::emulated(d)));
      }
      comm.allgather(in, out);
      for (const Tensor& o : out) {
        const auto got = o.to_host<double>();
        for (int r = 0; r < devices; ++r) {
          for (std::int64_t i = 0; i < n; ++i) {
            ASSERT_EQ(got[static_cast<std::size_t>(r * n + i)], value_at(r, i, 0)) << devices << " devices";
          }
        }
      }
    }
  }
}

TEST(Comm, ReduceScatterGivesEachRankItsReducedBlock) {
  for (int devices = 1; devices <= 4; ++devices) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
      const std::int64_t block = 6;
      auto engine = two_stream_engine(devices);
      Communicator comm = Communicator::world(*engine);
      std::vector<Tensor> in, out;
      for (int d = 0; d < devices; ++d) {
        in.push_back(make_input(*engine, d, devices * block, DType::float32, Device::emulated(d)));
        out.push_back(Tensor::zeros(*engine, {block}, DType::float32, Device::emulated(d)));
      }
      comm.reduce_scatter(in, out, op);
      for (int d = 0; d < devices; ++d) {
        const auto got = out[static_cast<std::size_t>(d)].to_host<double>();
        for (std::int64_t i = 0; i < block; ++i) {
          double sum = 0;
          for (int r = 0; r < devices; ++r) sum += value_at(r, d * block + i, 0);
          ASSERT_EQ(got[static_cast<std::size_t>(i)], reduced(sum, op, devices, DType::float32))
              << devices << " devices, rank " << d;
        }
      }
    }
  }
}

// CUDA tensors take part through host stand-ins (copied to pinned memory
// before, back after); detail::host_staged_world sends every non-CPU
// tensor that way, so that the path runs here on emulated devices: each
// collective, with a CPU tensor among them, gives the reference's values
// in the tensors themselves, leaves its read-only inputs as they were, and
// is ordered before a later operation on a tensor's own device.
TEST(Comm, EveryCollectiveThroughHostStandIns) {
  const int devices = 3;
  auto engine = two_stream_engine(devices);
  Communicator comm = detail::host_staged_world(*engine);
  const std::vector<Device> places = {Device::emulated(0), Device::cpu(), Device::emulated(1), Device::emulated(2)};
  const int ranks = static_cast<int>(places.size());
  const std::int64_t n = 10;
  int salt = 0;
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
    ++salt;
    std::vector<Tensor> t;
    for (int r = 0; r < ranks; ++r) t.push_back(make_input(*engine, r, n, DType::float64, places[r], salt));
    comm.allreduce(t, op);
    ops::scale(t[0], 2.0, t[0]);  // after the allreduce, on emulated:0
    for (int r = 0; r < ranks; ++r) {
      const auto got = t[static_cast<std::size_t>(r)].to_host<double>();
      for (std::int64_t i = 0; i < n; ++i) {
        double sum = 0;
        for (int q = 0; q < ranks; ++q) sum += value_at(q, i, salt);
        ASSERT_EQ(got[static_cast<std::size_t>(i)], (r == 0 ? 2.0 : 1.0) * reduced(sum, op, ranks, DType::float64))
            << "allreduce, rank " << r << ", element " << i;
      }
    }
  }
  {
    ++salt;
    std::vector<Tensor> t;
    for (int r = 0; r < ranks; ++r) t.push_back(make_input(*engine, r, n, DType::float32, places[r], salt));
    comm.broadcast(t, 0);
    for (const Tensor& x : t) {
      const auto got = x.to_host<double>();
      for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], value_at(0, i, salt));
    }
  }
  {
    ++salt;
    std::vector<Tensor> in, out;
    for (int r = 0; r < ranks; ++r) {
      in.push_back(make_input(*engine, r, n, DType::float32, places[r], salt));
      out.push_back(Tensor::zeros(*engine, {ranks, n}, DType::float32, places[r]));
    }
    comm.allgather(in, out);
    for (int r = 0; r < ranks; ++r) {
      const auto got = out[static_cast<std::size_t>(r)].to_host<double>();
      const auto kept = in[static_cast<std::size_t>(r)].to_host<double>();
      for (std::int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(kept[static_cast<std::size_t>(i)], value_at(r, i, salt)) << "allgather changed input " << r;
        for (int q = 0; q < ranks; ++q) ASSERT_EQ(got[static_cast<std::size_t>(q * n + i)], value_at(q, i, salt));
      }
    }
  }
  {
    ++salt;
    std::vector<Tensor> in, out;
    for (int r = 0; r < ranks; ++r) {
      in.push_back(make_input(*engine, r, ranks * n, DType::float64, places[r], salt));
      out.push_back(Tensor::zeros(*engine, {n}, DType::float64, places[r]));
    }
    comm.reduce_scatter(in, out);
    for (int r = 0; r < ranks; ++r) {
      const auto got = out[static_cast<std::size_t>(r)].to_host<double>();
      for (std::int64_t i = 0; i < n; ++i) {
        double sum = 0;
        for (int q = 0; q < ranks; ++q) sum += value_at(q, r * n + i, salt);
        ASSERT_EQ(got[static_cast<std::size_t>(i)], sum) << "reduce_scatter, rank " << r;
      }
    }
  }
}

// The same on a GPU: CUDA tensors beside a CPU one.
TEST(Comm, CudaTensorsThroughHostStandIns) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "needs a CUDA GPU (none is visible)";
  Engine engine;
  Communicator comm = Communicator::world(engine);
  const std::int64_t n = 1000;
  std::vector<Tensor> t = {make_input(engine, 0, n, DType::float32, Device::cuda(0)),
                           make_input(engine, 1, n, DType::float32, Device::cpu()),
                           make_input(engine, 2, n, DType::float32, Device::cuda(0))};
  comm.allreduce(t);
  ops::scale(t[0], 2.0, t[0]);  // on the GPU, after the allreduce
  for (std::size_t r = 0; r < t.size(); ++r) {
    const auto got = t[r].to_host<double>();
    for (std::int64_t i = 0; i < n; ++i) {
      const double sum = value_at(0, i, 0) + value_at(1, i, 0) + value_at(2, i, 0);
      ASSERT_EQ(got[static_cast<std::size_t>(i)], (r == 0 ? 2.0 : 1.0) * sum) << "rank " << r << ", element " << i;
    }
  }
}

TEST(Comm, MisuseIsRejectedAtPushAndPushesNothing) {
  auto engine = two_stream_engine(2);
  auto other = two_stream_engine(1);
  Communicator comm = Communicator::world(*engine);
  Tensor a = Tensor::full(*engine, {4}, 1.0, DType::float32, Device::emulated(0));
  Tensor b = Tensor::full(*engine, {4}, 2.0, DType::float32, Device::emulated(1));
  Tensor wrong_shape = Tensor::full(*engine, {5}, 2.0, DType::float32, Device::emulated(1));
  Tensor wrong_dtype = Tensor::full(*engine, {4}, 2.0, DType::float64, Device::emulated(1));
  Tensor labels = Tensor::zeros(*engine, {4}, DType::int32);
  Tensor foreign = Tensor::full(*other, {4}, 2.0, DType::float32, Device::emulated(0));
  auto rejects = [](auto&& call, const std::string& words) {
    try {
      call();
      ADD_FAILURE() << "no exception; expected one saying '" << words << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  rejects([&] { comm.allreduce({}); }, "no tensors");
  rejects([&] { comm.allreduce({a, Tensor()}); }, "null tensor");
  rejects([&] { comm.allreduce({a, foreign}); }, "another engine");
  rejects([&] { comm.allreduce({a, wrong_shape}); }, "differ");
  rejects([&] { comm.allreduce({a, wrong_dtype}); }, "differ");
  rejects([&] { comm.allreduce({labels}); }, "float32 or float64");
  rejects([&] { comm.allreduce({a, a}); }, "twice");
  const Tensor same_storage = a;
  rejects([&] { comm.allreduce({a, same_storage}); }, "twice");
  rejects([&] { comm.broadcast({a}, 1); }, "root process 1");
  rejects([&] { comm.broadcast({a}, -1); }, "root process -1");
  rejects([&] { comm.allgather({a, b}, {wrong_shape, wrong_dtype}); }, "differ");
  Tensor out1 = Tensor::zeros(*engine, {7}, DType::float32);
  Tensor out2 = Tensor::zeros(*engine, {7}, DType::float32, Device::emulated(1));
  rejects([&] { comm.allgather({a, b}, {out1, out2}); }, "must hold 2 ranks x 4");
  rejects([&] { comm.allgather({a, b}, {out1}); }, "2 inputs but 1 outputs");
  rejects([&] { comm.allgather({a}, {a}); }, "twice");
  rejects([&] { comm.reduce_scatter({a, b}, {out1, out2}); }, "must hold 2 ranks x 7");
  // Nothing ran: the tensors keep their values.
  for (float v : a.to_host<float>()) EXPECT_EQ(v, 1.0f);
  for (float v : b.to_host<float>()) EXPECT_EQ(v, 2.0f);
}

TEST(Comm, AFailedInputFailsTheCollectiveAndTheEngineGoesOn) {
  auto engine = two_stream_engine(2);
  Communicator comm = Communicator::world(*engine);
  Tensor a = Tensor::full(*engine, {8}, 1.0, DType::float32, Device::emulated(0));
  Tensor b = Tensor::full(*engine, {8}, 2.0, DType::float32, Device::emulated(1));
  engine->push([](RunContext&) { throw std::runtime_error("gradient kernel failed"); }, {}, {a.var()});
  comm.allreduce({a, b});
  try {
    b.to_host<float>();
    ADD_FAILURE() << "the allreduce of a failed input succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "gradient kernel failed");
  }
  try {
    a.to_host<float>();
    ADD_FAILURE() << "the failed input was not reported on its own tensor";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "gradient kernel failed");
  }
  // Reported once for each tensor: the collective's scratch variables, marked
  // too, report nothing more.
  EXPECT_NO_THROW(engine->wait_all());
  // Then the tensors work again.
  ops::fill(a, 3.0);
  ops::fill(b, 4.0);
  comm.allreduce({a, b});
  for (float v : a.to_host<float>()) EXPECT_EQ(v, 7.0f);
}

TEST(Comm, DroppingTheTensorsAndTheCommunicatorWhileInFlightIsSafe) {
  auto engine = two_stream_engine(4);
  std::vector<float> out;
  {
    Communicator comm = Communicator::world(*engine);
    std::vector<Tensor> t;
    for (int d = 0; d < 4; ++d) t.push_back(Tensor::full(*engine, {4099}, d, DType::float32, Device::emulated(d)));
    comm.allreduce(t, ReduceOp::mean);
    Tensor keep = t[3];
    t.clear();
    engine->push([&out, p = static_cast<const float*>(keep.data())](RunContext&) { out.assign(p, p + 4099); },
                 {keep.var()}, {});
  }
  engine->wait_all();
  ASSERT_EQ(out.size(), 4099u);
  for (float v : out) EXPECT_EQ(v, 6.0f * 0.25f);
}

}  // namespace
}  // namespace depengine
