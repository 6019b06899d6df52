// comm_bench: allreduce through depengine's Communicator against raw
// MPI_Allreduce, in the same run, under mpirun:
//   mpirun -np 2 build/bench/comm_bench [--json FILE]
// For each size from 8 B to 64 MiB (float32), both run the same number of
// back-to-back allreduces on one buffer; the time per allreduce is the
// slowest process's. Bus bandwidth as nccl-tests define it:
// busbw = bytes / time * 2 (n - 1) / n for n processes. Then 1,000
// allreduces of 4 KiB tensors, pushed one after the other, through a
// communicator that fuses them (the default) and one that does not, and one
// allreduce of the same 4,000 KiB for comparison.
//
// Google Benchmark is not used: it picks iteration counts per process, and
// the processes must run exactly the same collectives.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <depengine/comm.h>
#include <depengine/engine.h>
#include <depengine/tensor.h>

#include "bench/support/report_text.h"

namespace {

using Clock = std::chrono::steady_clock;
using depengine::Tensor;

// Seconds on the slowest process.
double slowest(double seconds) {
  double worst = 0;
  MPI_Allreduce(&seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

int iterations_for(std::size_t bytes) {
  return static_cast<int>(std::clamp<std::size_t>((std::size_t{256} << 20) / std::max<std::size_t>(bytes, 1), 10, 2000));
}

double time_raw(std::vector<float>& buffer, int iterations) {
  const int n = static_cast<int>(buffer.size());
  for (int i = 0; i < 3; ++i) MPI_Allreduce(MPI_IN_PLACE, buffer.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    MPI_Allreduce(MPI_IN_PLACE, buffer.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  return slowest(std::chrono::duration<double>(Clock::now() - start).count()) / iterations;
}

double time_depengine(depengine::Engine& engine, depengine::Communicator& comm, const Tensor& t, int iterations) {
  for (int i = 0; i < 3; ++i) comm.allreduce({t});
  engine.wait_to_read(t.var());
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) comm.allreduce({t});
  engine.wait_to_read(t.var());
  return slowest(std::chrono::duration<double>(Clock::now() - start).count()) / iterations;
}

double time_many(depengine::Engine& engine, depengine::Communicator& comm, const std::vector<Tensor>& tensors,
                 int repeats) {
  for (const Tensor& t : tensors) comm.allreduce({t});
  engine.wait_all();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = Clock::now();
  for (int r = 0; r < repeats; ++r) {
    for (const Tensor& t : tensors) comm.allreduce({t});
  }
  engine.wait_all();
  return slowest(std::chrono::duration<double>(Clock::now() - start).count()) / repeats;
}

}  // namespace

int main(int argc, char** argv) {
  const char* json_path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, processes = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  std::string json = "[";
  {
    depengine::Engine engine;
    depengine::Communicator comm = depengine::Communicator::world(engine);
    const double bus_factor = processes > 1 ? 2.0 * (processes - 1) / processes : 1.0;
    if (rank == 0) {
      std::printf("%s, %d CPU threads\n", comm.describe().c_str(), engine.cpu_threads());
      std::printf("%10s %8s %14s %14s %14s %14s %8s\n", "size", "iters", "raw us", "depengine us", "raw busbw",
                  "dep busbw", "ratio");
    }
    for (std::size_t bytes = 8; bytes <= (std::size_t{64} << 20); bytes *= 2) {
      const std::size_t n = bytes / sizeof(float);
      const int iterations = iterations_for(bytes);
      std::vector<float> buffer(n, 1.0f);
      const double raw = time_raw(buffer, iterations);
      const Tensor t = Tensor::full(engine, {static_cast<std::int64_t>(n)}, 1.0);
      const double dep = time_depengine(engine, comm, t, iterations);
      const double raw_bw = static_cast<double>(bytes) / raw * bus_factor / 1e9;
      const double dep_bw = static_cast<double>(bytes) / dep * bus_factor / 1e9;
      if (rank == 0) {
        std::printf("%10s %8d %14.2f %14.2f %11.3f GB/s %9.3f GB/s %8.2f\n", size_text(bytes).c_str(), iterations,
                    raw * 1e6, dep * 1e6, raw_bw, dep_bw, dep_bw / raw_bw);
        json += std::string(json.size() > 1 ? "," : "") + "\n {\"benchmark\": \"allreduce\", \"bytes\": " +
                std::to_string(bytes) + ", \"processes\": " + std::to_string(processes) +
                ", \"raw_mpi_seconds\": " + number(raw) + ", \"depengine_seconds\": " + number(dep) +
                ", \"raw_busbw_gbs\": " + number(raw_bw) + ", \"depengine_busbw_gbs\": " + number(dep_bw) + "}";
      }
    }

    constexpr int kTensors = 1000;
    constexpr std::int64_t kElements = 1024;  // 4 KiB of float32
    std::vector<Tensor> many;
    for (int i = 0; i < kTensors; ++i) many.push_back(Tensor::full(engine, {kElements}, 1.0));
    const Tensor one = Tensor::full(engine, {kTensors * kElements}, 1.0);
    depengine::Communicator unfused = depengine::Communicator::world(engine, {.fuse_below_bytes = 0});
    constexpr int kRepeats = 5;
    const depengine::CommStats before = comm.stats();
    const double fused = time_many(engine, comm, many, kRepeats);
    const depengine::CommStats after = comm.stats();
    const double each = time_many(engine, unfused, many, kRepeats);
    const double single = time_many(engine, comm, {one}, kRepeats);
    const double per_bucket = static_cast<double>(after.exchanges - before.exchanges) /
                              static_cast<double>(std::max<std::uint64_t>(after.buckets - before.buckets, 1));
    if (rank == 0) {
      std::printf("1000 x 4 KiB allreduces: fused %.3f ms (%.1f tensors per MPI collective), one MPI collective "
                  "each %.3f ms: fused %.1fx faster; one allreduce of 4000 KiB %.3f ms\n",
                  fused * 1e3, per_bucket, each * 1e3, each / fused, single * 1e3);
      json += ",\n {\"benchmark\": \"many_small\", \"tensors\": 1000, \"bytes_each\": 4096, \"processes\": " +
              std::to_string(processes) + ", \"fused_seconds\": " + number(fused) +
              ", \"tensors_per_collective\": " + number(per_bucket) + ", \"one_by_one_seconds\": " + number(each) +
              ", \"one_buffer_seconds\": " + number(single) + "}";
    }
  }
  if (rank == 0 && json_path) {
    if (FILE* f = std::fopen(json_path, "w")) {
      std::fprintf(f, "%s\n]\n", json.c_str());
      std::fclose(f);
    }
  }
  MPI_Finalize();
  return 0;
}
