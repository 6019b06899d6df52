// Collectives across processes: run under mpirun (ctest runs it with 2 and
// 3 processes); every process runs the same tests in the same order. Inputs
// are integers, so results compare bit for bit with a host reference.
// Outside mpirun, or built without MPI, the tests skip.

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <depengine/comm.h>
#include <depengine/cuda_memory.h>
#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "tests/support/comm_values.h"
#include "tests/support/engine_with_devices.h"

namespace depengine {
namespace {

#define SKIP_UNLESS_SEVERAL_PROCESSES(comm)                                                        \
  if ((comm).process_count() < 2) GTEST_SKIP() << "needs several processes (run under mpirun); " \
                                               << (comm).describe()

// A tensor of rank `rank`'s values for `salt`, written by an operation that
// first sleeps `delay`: the collective's input becomes ready late.
Tensor produced_late(Engine& engine, int rank, std::int64_t n, DType dtype, Device device, int salt,
                     std::chrono::microseconds delay) {
  Tensor t = Tensor::empty(engine, {n}, dtype, device);
  engine.push(
      [p = t.data(), n, dtype, rank, salt, delay](RunContext&) {
        std::this_thread::sleep_for(delay);
        for (std::int64_t i = 0; i < n; ++i) {
          if (dtype == DType::float64) static_cast<double*>(p)[i] = value_at(rank, i, salt);
          else static_cast<float*>(p)[i] = static_cast<float>(value_at(rank, i, salt));
        }
      },
      {}, {t.var()}, {.name = "produce", .device = device});
  return t;
}

// Every tensor holds the sum (or mean) over `ranks` ranks of value_at(r, i, salt).
void expect_allreduced(const std::vector<Tensor>& tensors, int ranks, ReduceOp op, DType dtype, int salt,
                       const std::string& what) {
  for (std::size_t j = 0; j < tensors.size(); ++j) {
    const auto got = tensors[j].to_host<double>();
    for (std::size_t i = 0; i < got.size(); ++i) {
      double sum = 0;
      for (int r = 0; r < ranks; ++r) sum += value_at(r, static_cast<std::int64_t>(i), salt);
      ASSERT_EQ(got[i], reduced(sum, op, ranks, dtype)) << what << ", local " << j << ", element " << i;
    }
  }
}

TEST(CommMpi, WorldSpansTheLaunchedProcesses) {
  Engine engine;
  Communicator comm = Communicator::world(engine);
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  EXPECT_NE(comm.describe().find("MPI"), std::string::npos) << comm.describe();
  EXPECT_GE(comm.process_rank(), 0);
  EXPECT_LT(comm.process_rank(), comm.process_count());
  comm.barrier();
}

TEST(CommMpi, AllreduceOverProcessesAndLocalDevices) {
  for (int local = 1; local <= 3; ++local) {
    auto engine = engine_with_devices(local);
    Communicator comm = Communicator::world(*engine);
    SKIP_UNLESS_SEVERAL_PROCESSES(comm);
    const int p = comm.process_rank(), ranks = local * comm.process_count();
    // Up to 4 MiB: large chunks go around the point-to-point ring.
    for (std::int64_t n : {0, 1, 7, 1 << 18, (1 << 19) + 3}) {
      for (DType dtype : {DType::float32, DType::float64}) {
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
          std::vector<Tensor> t;
          for (int j = 0; j < local; ++j) {
            t.push_back(produced_late(*engine, p * local + j, n, dtype, Device::emulated(j), 0, {}));
          }
          comm.allreduce(t, op);
          expect_allreduced(t, ranks, op, dtype, 0, std::to_string(local) + " local, n " + std::to_string(n));
        }
      }
    }
  }
}

// Across processes too, tensors that go through host stand-ins (as CUDA
// tensors do; detail::host_staged_world sends emulated ones that way) hold
// the sum afterwards, small and large (the point-to-point ring).
TEST(CommMpi, AllreduceThroughHostStandIns) {
  auto engine = engine_with_devices(2);
  Communicator comm = detail::host_staged_world(*engine);
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  const int p = comm.process_rank(), ranks = 2 * comm.process_count();
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{(1 << 18) + 5}}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
      std::vector<Tensor> t = {produced_late(*engine, 2 * p, n, DType::float32, Device::emulated(0), 3, {}),
                               produced_late(*engine, 2 * p + 1, n, DType::float32, Device::emulated(1), 3, {})};
      comm.allreduce(t, op);
      expect_allreduced(t, ranks, op, DType::float32, 3, "staged, n " + std::to_string(n));
    }
  }
}

// Small CPU tensors (summed by one operation in each process) across
// processes: sum and mean, at and past the one-operation size.
TEST(CommMpi, SmallCpuTensorsOverProcesses) {
  Engine engine;
  Communicator comm = Communicator::world(engine);
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  const int p = comm.process_rank(), local = 3, ranks = local * comm.process_count();
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{16384}, std::int64_t{16385}}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
      std::vector<Tensor> t;
      for (int j = 0; j < local; ++j) {
        t.push_back(produced_late(engine, p * local + j, n, DType::float32, Device::cpu(), 5,
                                  std::chrono::microseconds(200 * ((p + j) % 3))));
      }
      comm.allreduce(t, op);
      expect_allreduced(t, ranks, op, DType::float32, 5, "CPU tensors, n " + std::to_string(n));
    }
  }
}

// With NCCL inside each process (one GPU each, through detail::nccl_world),
// the process's sum goes to the other processes from a host copy and back
// into the GPU.
TEST(CommMpi, NcclInsideEachProcessThenMpi) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "needs a CUDA GPU (none is visible)";
  Engine engine;
  Communicator comm = detail::nccl_world(engine);
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  if (comm.describe().find("NCCL") == std::string::npos) GTEST_SKIP() << "built without NCCL: " << comm.describe();
  const int p = comm.process_rank();
  const Device gpu = Device::cuda(p % cuda_device_count());
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{(1 << 18) + 5}}) {
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
      std::vector<Tensor> t = {make_input(engine, p, n, DType::float32, gpu, 9)};
      comm.allreduce(t, op);
      expect_allreduced(t, comm.process_count(), op, DType::float32, 9, "NCCL then MPI, n " + std::to_string(n));
    }
  }
}

TEST(CommMpi, BroadcastFromEveryRoot) {
  auto engine = engine_with_devices(2);
  Communicator comm = Communicator::world(*engine);
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  const int p = comm.process_rank();
  for (int root = 0; root < comm.process_count(); ++root) {
    std::vector<Tensor> t = {produced_late(*engine, 2 * p, 100, DType::float32, Device::emulated(0), root, {}),
                             produced_late(*engine, 2 * p + 1, 100, DType::float32, Device::emulated(1), root, {})};
    comm.broadcast(t, root);
    for (const Tensor& x : t) {
      const auto got = x.to_host<double>();
      for (std::int64_t i = 0; i < 100; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], value_at(2 * root, i, root));
    }
  }
}

// A random sequence of collectives, the same on every process, whose inputs
// are written by operations of random durations that differ per process, so
// that the collectives become ready in a different order on each; with
// mixed priorities. Every result is checked. Every process has 2 local
// tensors, or (the UnequalCounts tests) 1, 3, 2, 1, 3, ... by process rank.
// Default options, and tiny buckets and pieces (every large exchange cut in
// many pieces, fused runs cut short), so that cutting and fusing meet
// random ready orders.
class RandomCollectives : public ::testing::TestWithParam<CommOptions> {};

int unequal_local_count(int process) { return std::array{1, 3, 2}[static_cast<std::size_t>(process % 3)]; }

// The ranks of the processes before `process` (ranks are numbered process
// by process, tensor by tensor), and of all of them.
int first_rank(int process, int (*local_count)(int)) {
  int first = 0;
  for (int q = 0; q < process; ++q) first += local_count(q);
  return first;
}

void random_collectives(const CommOptions& options, int (*local_count)(int)) {
  constexpr int kCollectives = 40;
  auto engine = engine_with_devices(3);
  Communicator comm = Communicator::world(*engine, options);
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  const int p = comm.process_rank(), processes = comm.process_count();
  const int kLocal = local_count(p), ranks = first_rank(processes, local_count);
  const int mine = first_rank(p, local_count);
  std::mt19937 shared(2026);                       // the same sequence everywhere
  std::mt19937 own(static_cast<unsigned>(p) + 7);  // delays of this process

  enum class Kind { allreduce, broadcast, allgather, reduce_scatter };
  struct Pushed {
    Kind kind;
    std::int64_t n;
    DType dtype;
    ReduceOp op;
    int root;
    std::vector<Tensor> outputs;
  };
  std::vector<Pushed> pushed;
  for (int k = 0; k < kCollectives; ++k) {
    Pushed c;
    c.kind = static_cast<Kind>(std::uniform_int_distribution<int>(0, 3)(shared));
    c.n = std::uniform_int_distribution<std::int64_t>(0, 3000)(shared);
    c.dtype = std::uniform_int_distribution<int>(0, 1)(shared) ? DType::float64 : DType::float32;
    c.op = std::uniform_int_distribution<int>(0, 1)(shared) ? ReduceOp::mean : ReduceOp::sum;
    c.root = std::uniform_int_distribution<int>(0, processes - 1)(shared);
    const PushOptions options{.priority = std::uniform_int_distribution<int>(-2, 2)(shared)};
    const std::int64_t in_n = c.kind == Kind::reduce_scatter ? ranks * c.n : c.n;
    std::vector<Tensor> inputs;
    for (int j = 0; j < kLocal; ++j) {
      const auto delay = std::chrono::microseconds(std::uniform_int_distribution<int>(0, 4000)(own));
      inputs.push_back(produced_late(*engine, mine + j, in_n, c.dtype, Device::emulated(j), k, delay));
    }
    switch (c.kind) {
      case Kind::allreduce:
        comm.allreduce(inputs, c.op, options);
        c.outputs = inputs;
        break;
      case Kind::broadcast:
        comm.broadcast(inputs, c.root, options);
        c.outputs = inputs;
        break;
      case Kind::allgather:
      case Kind::reduce_scatter:
        for (int j = 0; j < kLocal; ++j) {
          const std::int64_t out_n = c.kind == Kind::allgather ? ranks * c.n : c.n;
          c.outputs.push_back(Tensor::zeros(*engine, {out_n}, c.dtype, Device::emulated(j)));
        }
        if (c.kind == Kind::allgather) comm.allgather(inputs, c.outputs, options);
        else comm.reduce_scatter(inputs, c.outputs, c.op, options);
        break;
    }
    pushed.push_back(std::move(c));
  }
  for (int k = 0; k < kCollectives; ++k) {
    const Pushed& c = pushed[static_cast<std::size_t>(k)];
    for (int j = 0; j < kLocal; ++j) {
      const auto got = c.outputs[static_cast<std::size_t>(j)].to_host<double>();
      const int me = mine + j;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const auto e = static_cast<std::int64_t>(i);
        double expected = 0;
        switch (c.kind) {
          case Kind::allreduce: {
            double sum = 0;
            for (int r = 0; r < ranks; ++r) sum += value_at(r, e, k);
            expected = reduced(sum, c.op, ranks, c.dtype);
            break;
          }
          case Kind::broadcast: expected = value_at(first_rank(c.root, local_count), e, k); break;
          case Kind::allgather: expected = value_at(static_cast<int>(e / c.n), e % c.n, k); break;
          case Kind::reduce_scatter: {
            double sum = 0;
            for (int r = 0; r < ranks; ++r) sum += value_at(r, me * c.n + e, k);
            expected = reduced(sum, c.op, ranks, c.dtype);
            break;
          }
        }
        ASSERT_EQ(got[i], expected) << "collective " << k << " (kind " << static_cast<int>(c.kind) << ", n "
                                    << c.n << "), local " << j << ", element " << i;
      }
    }
  }
}

TEST_P(RandomCollectives, WithDifferentReadyOrders) {
  random_collectives(GetParam(), [](int) { return 2; });
}

TEST_P(RandomCollectives, WithUnequalLocalCountsAndDifferentReadyOrders) {
  random_collectives(GetParam(), unequal_local_count);
}

INSTANTIATE_TEST_SUITE_P(Options, RandomCollectives,
                         ::testing::Values(CommOptions{},
                                           CommOptions{.fuse_below_bytes = 4096, .bucket_bytes = 6000, .piece_bytes = 1000}),
                         [](const ::testing::TestParamInfo<CommOptions>& info) {
                           return info.param.piece_bytes == CommOptions{}.piece_bytes ? std::string("defaults")
                                                                                      : std::string("tiny");
                         });

// Many small allreduces whose inputs are all ready go out fused: fewer MPI
// collectives than exchanges, the same results as one by one.
TEST(CommMpi, SmallAllreducesReadyTogetherAreFused) {
  auto engine = engine_with_devices(1);
  Communicator fused = Communicator::world(*engine);
  Communicator one_by_one = Communicator::world(*engine, {.fuse_below_bytes = 0});
  SKIP_UNLESS_SEVERAL_PROCESSES(fused);
  const int p = fused.process_rank(), processes = fused.process_count();
  for (Communicator* comm : {&fused, &one_by_one}) {
    std::vector<Tensor> grads;
    for (int k = 0; k < 300; ++k) {
      grads.push_back(produced_late(*engine, p, 1 + k % 37, k % 5 == 0 ? DType::float64 : DType::float32,
                                    Device::cpu(), k, {}));
    }
    engine->wait_all();  // every input ready before the first allreduce
    const CommStats before = comm->stats();
    for (const Tensor& g : grads) comm->allreduce({g}, ReduceOp::sum, {.priority = static_cast<int>(g.numel() % 3)});
    for (int k = 0; k < 300; ++k) {
      const auto got = grads[static_cast<std::size_t>(k)].to_host<double>();
      for (std::size_t i = 0; i < got.size(); ++i) {
        double sum = 0;
        for (int r = 0; r < processes; ++r) sum += value_at(r, static_cast<std::int64_t>(i), k);
        ASSERT_EQ(got[i], sum) << "allreduce " << k;
      }
    }
    const CommStats after = comm->stats();
    EXPECT_EQ(after.exchanges - before.exchanges, 300u);
    if (comm == &fused) EXPECT_LT(after.buckets - before.buckets, 300u);
    else EXPECT_EQ(after.buckets - before.buckets, 300u);
  }
}

// Allreduces of at most 256 bytes travel inside their bucket's metadata
// step: one at a time, each of 8 and 256 bytes does, one of 260 bytes does
// not; fused, a bucket whose first members fit and whose others do not
// gets its sums from its data step. The sums are the same every way, with
// the inputs ready at different times on the processes.
TEST(CommMpi, TheSmallestAllreducesTravelWithTheirMetadata) {
  auto engine = engine_with_devices(1);
  Communicator one_by_one = Communicator::world(*engine, {.fuse_below_bytes = 0});
  Communicator fused = Communicator::world(*engine);
  SKIP_UNLESS_SEVERAL_PROCESSES(one_by_one);
  const int p = one_by_one.process_rank(), processes = one_by_one.process_count();
  const auto delay = std::chrono::microseconds(p == 0 ? 2000 : 0);
  struct Case {
    std::int64_t n;
    DType dtype;
    bool travels_inline;
  };
  int salt = 0;
  for (const Case& c : {Case{1, DType::float64, true}, Case{64, DType::float32, true}, Case{65, DType::float32, false},
                        Case{32, DType::float64, true}, Case{33, DType::float64, false}}) {
    SCOPED_TRACE(std::to_string(c.n) + " elements of " + std::string(dtype_name(c.dtype)));
    const CommStats before = one_by_one.stats();
    Tensor t = produced_late(*engine, p, c.n, c.dtype, Device::cpu(), ++salt, delay);
    one_by_one.allreduce({t});
    expect_allreduced({t}, processes, ReduceOp::sum, c.dtype, salt, "one by one");
    const CommStats after = one_by_one.stats();
    EXPECT_EQ(after.buckets - before.buckets, 1u);
    EXPECT_EQ(after.inline_buckets - before.inline_buckets, c.travels_inline ? 1u : 0u);
  }
  std::vector<Tensor> grads;
  const int first_salt = salt + 1;
  for (int k = 0; k < 12; ++k) grads.push_back(produced_late(*engine, p, 20, DType::float32, Device::cpu(), ++salt, {}));
  engine->wait_all();  // all ready: 12 x 80 bytes fuse, and only the first three fit in the metadata
  for (const Tensor& g : grads) fused.allreduce({g});
  for (int k = 0; k < 12; ++k) {
    expect_allreduced({grads[static_cast<std::size_t>(k)]}, processes, ReduceOp::sum, DType::float32, first_salt + k,
                      "fused, allreduce " + std::to_string(k));
  }
}

// A tensor larger than a piece goes out in pieces, each its own exchange.
TEST(CommMpi, LargeTensorsGoInPieces) {
  auto engine = engine_with_devices(2);
  Communicator comm = Communicator::world(*engine, {.piece_bytes = 4096});
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  const int p = comm.process_rank(), ranks = 2 * comm.process_count();
  const std::int64_t n = 100001;  // two chunks of about 200 KB, about 49 pieces each
  std::vector<Tensor> t = {produced_late(*engine, 2 * p, n, DType::float32, Device::emulated(0), 3, {}),
                           produced_late(*engine, 2 * p + 1, n, DType::float32, Device::emulated(1), 3, {})};
  const CommStats before = comm.stats();
  comm.allreduce(t, ReduceOp::mean);
  const auto got = t[1].to_host<double>();
  for (std::int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int r = 0; r < ranks; ++r) sum += value_at(r, i, 3);
    ASSERT_EQ(got[static_cast<std::size_t>(i)], reduced(sum, ReduceOp::mean, ranks, DType::float32)) << i;
  }
  // The process's sum goes out whole, in pieces, and the mean's count beside it.
  EXPECT_EQ(comm.stats().exchanges - before.exchanges, (n * 4 + 4095) / 4096 + 1);
}

// Processes with 1, 3, 2, ... local tensors (the first on the CPU, the others
// on emulated devices): every collective against a host reference, for
// sizes that go fused, around the point-to-point ring and in pieces.
TEST(CommMpi, EveryCollectiveWithUnequalLocalCounts) {
  auto engine = engine_with_devices(3);
  Communicator comm = Communicator::world(*engine, {.piece_bytes = 64 << 10});
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  const int p = comm.process_rank(), processes = comm.process_count(), local = unequal_local_count(p);
  const int ranks = first_rank(processes, unequal_local_count), mine = first_rank(p, unequal_local_count);
  auto device = [local](int j) { return local == 1 ? Device::cpu() : Device::emulated(j); };
  auto inputs_of = [&](std::int64_t n, DType dtype, int salt) {
    std::vector<Tensor> t;
    for (int j = 0; j < local; ++j) t.push_back(produced_late(*engine, mine + j, n, dtype, device(j), salt, {}));
    return t;
  };
  for (std::int64_t n : {0, 1, 7, 5000, (1 << 16) + 3}) {
    for (DType dtype : {DType::float32, DType::float64}) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
        std::vector<Tensor> t = inputs_of(n, dtype, 1);
        comm.allreduce(t, op);
        expect_allreduced(t, ranks, op, dtype, 1, "allreduce, n " + std::to_string(n));
      }
      for (int root = 0; root < processes; ++root) {
        std::vector<Tensor> t = inputs_of(n, dtype, 2 + root);
        comm.broadcast(t, root);
        for (const Tensor& x : t) {
          const auto got = x.to_host<double>();
          for (std::int64_t i = 0; i < n; ++i) {
            ASSERT_EQ(got[static_cast<std::size_t>(i)], value_at(first_rank(root, unequal_local_count), i, 2 + root))
                << "broadcast from " << root << ", n " << n << ", element " << i;
          }
        }
      }
      std::vector<Tensor> in = inputs_of(n, dtype, 9), gathered;
      for (int j = 0; j < local; ++j) gathered.push_back(Tensor::zeros(*engine, {ranks * n}, dtype, device(j)));
      comm.allgather(in, gathered);
      for (const Tensor& x : gathered) {
        const auto got = x.to_host<double>();
        for (std::int64_t i = 0; i < ranks * n; ++i) {
          ASSERT_EQ(got[static_cast<std::size_t>(i)], value_at(static_cast<int>(i / n), i % n, 9))
              << "allgather, n " << n << ", element " << i;
        }
      }
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
        std::vector<Tensor> blocks = inputs_of(ranks * n, dtype, 11), scattered;
        for (int j = 0; j < local; ++j) scattered.push_back(Tensor::zeros(*engine, {n}, dtype, device(j)));
        comm.reduce_scatter(blocks, scattered, op);
        for (int j = 0; j < local; ++j) {
          const auto got = scattered[static_cast<std::size_t>(j)].to_host<double>();
          for (std::int64_t i = 0; i < n; ++i) {
            double sum = 0;
            for (int r = 0; r < ranks; ++r) sum += value_at(r, (mine + j) * n + i, 11);
            ASSERT_EQ(got[static_cast<std::size_t>(i)], reduced(sum, op, ranks, dtype))
                << "reduce_scatter, n " << n << ", local " << j << ", element " << i;
          }
        }
      }
    }
  }
}

// Outputs sized for another number of ranks than the processes' tensors
// make, on every process or on all but process 0: an error on every process.
// The communicator goes on.
TEST(CommMpi, RankCountsThatDoNotMatchTheShapesFailOnEveryProcess) {
  auto engine = engine_with_devices(3);
  Communicator comm = Communicator::world(*engine);
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  const int p = comm.process_rank(), local = unequal_local_count(p);
  const int ranks = first_rank(comm.process_count(), unequal_local_count);
  auto expect_failure = [](const Tensor& t, const std::string& expected) {
    try {
      t.to_host<float>();
      ADD_FAILURE() << "a collective of mismatched ranks succeeded";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  for (int extra : {1, 0}) {
    std::vector<Tensor> in, out, blocks, scattered;
    const int assumed = ranks + (extra ? 1 : p);  // every process alike, then one per process
    for (int j = 0; j < local; ++j) {
      in.push_back(Tensor::full(*engine, {3}, 1.0, DType::float32, Device::emulated(j)));
      out.push_back(Tensor::zeros(*engine, {assumed * 3}, DType::float32, Device::emulated(j)));
      blocks.push_back(Tensor::full(*engine, {assumed * 3}, 1.0, DType::float32, Device::emulated(j)));
      scattered.push_back(Tensor::zeros(*engine, {3}, DType::float32, Device::emulated(j)));
    }
    comm.allgather(in, out);
    comm.reduce_scatter(blocks, scattered);
    // Process 0's shapes are right when they differ: it learns of the
    // others' through the disagreement; the others see their counts.
    const std::string expected = !extra && p == 0 ? "disagree" : "local tensors";
    expect_failure(out[0], expected);
    expect_failure(scattered[0], expected);
  }
  // Shapes that hold no whole number of ranks, or fewer than this process
  // gives, are rejected at push on the process that has them.
  Tensor x = Tensor::full(*engine, {3}, 1.0, DType::float32, Device::emulated(0));
  Tensor y = Tensor::full(*engine, {3}, 1.0, DType::float32, Device::emulated(1));
  EXPECT_THROW(comm.allgather({x}, {Tensor::zeros(*engine, {7}, DType::float32)}), std::invalid_argument);
  EXPECT_THROW(comm.allgather({x, y}, {Tensor::zeros(*engine, {3}, DType::float32),
                                       Tensor::zeros(*engine, {3}, DType::float32)}),
               std::invalid_argument);
  EXPECT_THROW(comm.reduce_scatter({Tensor::zeros(*engine, {8}, DType::float32)}, {x}), std::invalid_argument);
  std::vector<Tensor> t;
  for (int j = 0; j < local; ++j) t.push_back(Tensor::full(*engine, {5}, 1.0, DType::float32, Device::emulated(j)));
  comm.allreduce(t);
  for (float v : t[0].to_host<float>()) EXPECT_EQ(v, static_cast<float>(ranks));
}

TEST(CommMpi, MismatchedShapesFailOnEveryProcessAndTheCommunicatorGoesOn) {
  auto engine = engine_with_devices(1);
  Communicator comm = Communicator::world(*engine);
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  const int p = comm.process_rank();
  Tensor t = Tensor::full(*engine, {p == 0 ? 5 : 6}, 1.0, DType::float32, Device::emulated(0));
  comm.allreduce({t});
  try {
    t.to_host<float>();
    ADD_FAILURE() << "an allreduce of mismatched shapes succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("disagree"), std::string::npos) << e.what();
  }
  Tensor u = Tensor::full(*engine, {6}, 1.0, DType::float32, Device::emulated(0));
  comm.allreduce({u});
  for (float v : u.to_host<float>()) EXPECT_EQ(v, static_cast<float>(comm.process_count()));
}

TEST(CommMpi, MismatchedDtypesFailOnEveryProcess) {
  auto engine = engine_with_devices(1);
  Communicator comm = Communicator::world(*engine);
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  const DType dtype = comm.process_rank() == 0 ? DType::float64 : DType::float32;
  Tensor t = Tensor::full(*engine, {4}, 1.0, dtype, Device::emulated(0));
  comm.allreduce({t});
  EXPECT_THROW(t.to_host<double>(), std::runtime_error);
}

TEST(CommMpi, AnInputThatFailsOnOneProcessFailsTheCollectiveEverywhere) {
  auto engine = engine_with_devices(2);
  Communicator comm = Communicator::world(*engine);
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  const int p = comm.process_rank();
  Tensor a = Tensor::full(*engine, {10}, 1.0, DType::float32, Device::emulated(0));
  Tensor b = Tensor::full(*engine, {10}, 1.0, DType::float32, Device::emulated(1));
  if (p == 1) engine->push([](RunContext&) { throw std::runtime_error("kernel failed on process 1"); }, {}, {b.var()});
  comm.allreduce({a, b});
  try {
    a.to_host<float>();
    ADD_FAILURE() << "the collective succeeded although an input failed";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (p == 1) EXPECT_EQ(what, "kernel failed on process 1");
    else EXPECT_NE(what.find("an input failed on process 1"), std::string::npos) << what;
  }
  EXPECT_THROW(b.to_host<float>(), std::runtime_error);  // each failed tensor reports once
  ops::fill(a, 1.0);
  ops::fill(b, 2.0);
  comm.allreduce({a, b});
  for (float v : b.to_host<float>()) EXPECT_EQ(v, 3.0f * static_cast<float>(comm.process_count()));
}

TEST(CommMpi, NaiveEngineAndBarriers) {
  auto engine = engine_with_devices(2, EngineKind::Naive);
  Communicator comm = Communicator::world(*engine);
  SKIP_UNLESS_SEVERAL_PROCESSES(comm);
  const int p = comm.process_rank();
  for (int round = 0; round < 5; ++round) {
    std::vector<Tensor> t = {Tensor::full(*engine, {17}, p + round, DType::float64, Device::emulated(0)),
                             Tensor::full(*engine, {17}, 1.0, DType::float64, Device::emulated(1))};
    comm.allreduce(t);
    comm.barrier();
    double expected = 0;
    for (int q = 0; q < comm.process_count(); ++q) expected += q + round + 1.0;
    for (double v : t[0].to_host<double>()) ASSERT_EQ(v, expected);
  }
}

}  // namespace
}  // namespace depengine
