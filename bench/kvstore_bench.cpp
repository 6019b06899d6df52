// kvstore_bench: push+pull through the dist_sync KVStore against the
// Communicator's allreduce and raw MPI_Allreduce, in the same run, under
// mpirun:
//   mpirun -np 4 build/bench/kvstore_bench                 # 1, 2 and 4 shards in the workers
//   mpirun -np 3 build/bench/kvstore_bench --servers 1     # 2 workers, 1 server process
//   ... [--json FILE] [--part-bytes B] [--size BYTES]   (--size: that key size only)
// For each key size from 4 KiB to 64 MiB (float32), every worker runs the
// same number of back-to-back pushpulls of one key (its tensor pushed,
// then the merged sum pulled back into it) through stores with 1, 2 and 4
// shards in the workers (and one in each process), allreduces and raw
// allreduces of the same buffer; the time per call is the slowest worker's.
// The methods take turns, in kRepeats batches each, and each reports its
// median batch, so that a load that comes and goes on a shared machine
// falls on all of them alike (their ratio is the number to read). Bus
// bandwidth as nccl-tests define it for an allreduce of n workers:
// busbw = bytes / time * 2 (n - 1) / n. With dedicated servers the
// Communicator is left out (it spans every process, servers included) and
// raw MPI runs among the workers.
//
// Google Benchmark is not used: it picks iteration counts per process, and
// the processes must run exactly the same calls.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <depengine/comm.h>
#include <depengine/engine.h>
#include <depengine/kvstore.h>
#include <depengine/tensor.h>

#include "bench/support/report_text.h"

namespace {

using Clock = std::chrono::steady_clock;
using depengine::Tensor;

MPI_Comm g_workers = MPI_COMM_NULL;

double slowest(double seconds) {
  double worst = 0;
  MPI_Allreduce(&seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, g_workers);
  return worst;
}

constexpr int kRepeats = 5;

// Calls per batch: about 64 MiB moved, at least 4.
int iterations_for(std::size_t bytes) {
  return static_cast<int>(std::clamp<std::size_t>((std::size_t{64} << 20) / bytes, 4, 200));
}

// One method of moving the buffer: `call` starts one, `wait` waits for
// those started.
struct Method {
  std::function<void()> call, wait;
  std::vector<double> batches;  // seconds per call
};

void time_batch(Method& m, int iterations) {
  m.call();
  m.wait();
  MPI_Barrier(g_workers);
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) m.call();
  m.wait();
  m.batches.push_back(slowest(std::chrono::duration<double>(Clock::now() - start).count()) / iterations);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per call of each method, the methods in turns.
std::vector<double> time_methods(std::vector<Method>& methods, int iterations) {
  for (int r = 0; r < kRepeats; ++r) {
    for (Method& m : methods) time_batch(m, iterations);
  }
  std::vector<double> seconds;
  for (const Method& m : methods) seconds.push_back(median(m.batches));
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const char* json_path = nullptr;
  int servers = 0;
  std::size_t part_bytes = depengine::KVStoreOptions{}.part_bytes;
  std::size_t min_bytes = std::size_t{4} << 10, max_bytes = std::size_t{64} << 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
    else if (std::strcmp(argv[i], "--servers") == 0 && i + 1 < argc) servers = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--part-bytes") == 0 && i + 1 < argc) part_bytes = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--size") == 0 && i + 1 < argc) min_bytes = max_bytes = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: kvstore_bench [--servers N] [--part-bytes B] [--size BYTES] [--json FILE]\n");
      return 2;
    }
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, processes = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  const int workers = processes - servers;
  MPI_Comm_split(MPI_COMM_WORLD, rank < workers ? 0 : MPI_UNDEFINED, rank, &g_workers);
  std::string json = "[";
  {
    depengine::Engine engine;
    // With shards in the workers: 1 (a central server), 2 and 4 shards, up
    // to one per process; with dedicated servers, one store over them.
    std::vector<int> shard_counts;
    if (servers > 0) shard_counts.push_back(servers);
    for (int shards = 1; servers == 0 && shards <= processes; shards *= 2) {
      if (shards <= 4 || shards == processes) shard_counts.push_back(shards);
    }
    if (servers == 0 && shard_counts.back() != processes) shard_counts.push_back(processes);
    std::vector<depengine::KVStore> stores;
    for (int shards : shard_counts) {
      stores.push_back(depengine::KVStore::create(
          engine, "dist_sync",
          {.servers = servers, .shards = servers > 0 ? 0 : shards, .part_bytes = part_bytes, .updater = {}}));
    }
    if (stores.front().is_worker()) {
      std::optional<depengine::Communicator> comm;
      if (servers == 0) comm.emplace(depengine::Communicator::world(engine));
      const double bus_factor = workers > 1 ? 2.0 * (workers - 1) / workers : 1.0;
      if (rank == 0) {
        for (const depengine::KVStore& kv : stores) std::printf("%s\n", kv.describe().c_str());
        std::printf("part_bytes %zu, %d CPU threads; bus bandwidth in GB/s, the median of %d batches of "
                    "`calls`\n%10s %6s %10s %10s",
                    part_bytes, engine.cpu_threads(), kRepeats, "size", "calls", "raw", "allreduce");
        for (int shards : shard_counts) std::printf(" %8s%-2d", "kv S=", shards);
        std::printf(" %10s\n", "kv/ar");
      }
      int key = 0;
      for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4, ++key) {
        const std::size_t n = bytes / sizeof(float);
        const int iterations = iterations_for(bytes);
        std::vector<float> buffer(n, 1.0f);
        const Tensor t = Tensor::full(engine, {static_cast<std::int64_t>(n)}, 1.0);
        const auto wait_t = [&] { engine.wait_to_read(t.var()); };
        std::vector<Method> methods;
        methods.push_back({.call = [&] {
                             MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                                           g_workers);
                           },
                           .wait = [] {},
                           .batches = {}});
        if (comm) methods.push_back({.call = [&] { comm->allreduce({t}); }, .wait = wait_t, .batches = {}});
        for (depengine::KVStore& kv : stores) {
          kv.init(key, t);
          methods.push_back({.call = [&kv, &t, key] { kv.pushpull(key, {t}, {t}); }, .wait = wait_t, .batches = {}});
        }
        const std::vector<double> seconds = time_methods(methods, iterations);
        const double raw = seconds[0];
        const double allreduce = comm ? seconds[1] : 0.0;
        const std::vector<double> pushpull(seconds.begin() + (comm ? 2 : 1), seconds.end());
        auto busbw = [&](double seconds) {
          return seconds > 0 ? static_cast<double>(bytes) / seconds * bus_factor / 1e9 : 0.0;
        };
        if (rank == 0) {
          std::printf("%10s %6d %10.3f %10.3f", size_text(bytes).c_str(), iterations, busbw(raw), busbw(allreduce));
          for (double p : pushpull) std::printf(" %10.3f", busbw(p));
          std::printf(" %10.2f\n", allreduce > 0 ? busbw(pushpull.back()) / busbw(allreduce) : 0.0);
          for (std::size_t i = 0; i < stores.size(); ++i) {
            json += std::string(json.size() > 1 ? "," : "") + "\n {\"benchmark\": \"pushpull\", \"bytes\": " +
                    std::to_string(bytes) + ", \"workers\": " + std::to_string(workers) + ", \"shards\": " +
                    std::to_string(shard_counts[i]) + ", \"dedicated_servers\": " + std::to_string(servers) +
                    ", \"raw_mpi_seconds\": " + number(raw) + ", \"allreduce_seconds\": " + number(allreduce) +
                    ", \"pushpull_seconds\": " + number(pushpull[i]) + ", \"raw_busbw_gbs\": " + number(busbw(raw)) +
                    ", \"allreduce_busbw_gbs\": " + number(busbw(allreduce)) +
                    ", \"pushpull_busbw_gbs\": " + number(busbw(pushpull[i])) + "}";
          }
        }
      }
    }
  }
  if (rank == 0 && json_path) {
    if (FILE* f = std::fopen(json_path, "w")) {
      std::fprintf(f, "%s\n]\n", json.c_str());
      std::fclose(f);
    }
  }
  if (g_workers != MPI_COMM_NULL) MPI_Comm_free(&g_workers);
  MPI_Finalize();
  return 0;
}
