// kvstore_bench: push+pull through the dist_sync KVStore against the
// Communicator's allreduce and raw MPI_Allreduce, in the same run, under
// mpirun:
//   mpirun -np 2 build/bench/kvstore_bench                 # a shard in each process
//   mpirun -np 3 build/bench/kvstore_bench --servers 1     # 2 workers, 1 server process
//   ... [--json FILE] [--part-bytes B]
// For each key size from 4 KiB to 64 MiB (float32), every worker runs the
// same number of back-to-back pushpulls of one key (its tensor pushed,
// then the merged sum pulled back into it), allreduces and raw allreduces
// of the same buffer; the time per call is the slowest worker's. Bus
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
#include <optional>
#include <string>
#include <vector>

#include <depengine/comm.h>
#include <depengine/engine.h>
#include <depengine/kvstore.h>
#include <depengine/tensor.h>

namespace {

using Clock = std::chrono::steady_clock;
using depengine::Tensor;

MPI_Comm g_workers = MPI_COMM_NULL;

double slowest(double seconds) {
  double worst = 0;
  MPI_Allreduce(&seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, g_workers);
  return worst;
}

int iterations_for(std::size_t bytes) {
  return static_cast<int>(std::clamp<std::size_t>((std::size_t{256} << 20) / bytes, 5, 500));
}

template <class Call, class Wait>
double time_calls(int iterations, Call call, Wait wait) {
  for (int i = 0; i < 3; ++i) call();
  wait();
  MPI_Barrier(g_workers);
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) call();
  wait();
  return slowest(std::chrono::duration<double>(Clock::now() - start).count()) / iterations;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

std::string size_text(std::size_t bytes) {
  if (bytes >= (1u << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

int main(int argc, char** argv) {
  const char* json_path = nullptr;
  int servers = 0;
  std::size_t part_bytes = depengine::KVStoreOptions{}.part_bytes;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
    else if (std::strcmp(argv[i], "--servers") == 0 && i + 1 < argc) servers = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--part-bytes") == 0 && i + 1 < argc) part_bytes = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: kvstore_bench [--servers N] [--part-bytes B] [--json FILE]\n");
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
    depengine::KVStore kv = depengine::KVStore::create(engine, "dist_sync",
                                                       {.servers = servers, .part_bytes = part_bytes, .updater = {}});
    if (kv.is_worker()) {
      std::optional<depengine::Communicator> comm;
      if (servers == 0) comm.emplace(depengine::Communicator::world(engine));
      const double bus_factor = workers > 1 ? 2.0 * (workers - 1) / workers : 1.0;
      if (rank == 0) {
        std::printf("%s; part_bytes %zu, %d CPU threads\n", kv.describe().c_str(), part_bytes, engine.cpu_threads());
        std::printf("%10s %6s %12s %12s %12s %14s %14s %14s %8s\n", "size", "iters", "raw us", "allreduce us",
                    "pushpull us", "raw busbw", "allreduce busbw", "pushpull busbw", "kv/ar");
      }
      int key = 0;
      for (std::size_t bytes = std::size_t{4} << 10; bytes <= (std::size_t{64} << 20); bytes *= 4, ++key) {
        const std::size_t n = bytes / sizeof(float);
        const int iterations = iterations_for(bytes);
        std::vector<float> buffer(n, 1.0f);
        const double raw = time_calls(
            iterations,
            [&] { MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, g_workers); },
            [] {});
        const Tensor t = Tensor::full(engine, {static_cast<std::int64_t>(n)}, 1.0);
        double allreduce = 0;
        if (comm) {
          allreduce = time_calls(iterations, [&] { comm->allreduce({t}); }, [&] { engine.wait_to_read(t.var()); });
        }
        kv.init(key, t);
        const double pushpull =
            time_calls(iterations, [&] { kv.pushpull(key, {t}, {t}); }, [&] { engine.wait_to_read(t.var()); });
        auto busbw = [&](double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds * bus_factor / 1e9 : 0.0; };
        if (rank == 0) {
          std::printf("%10s %6d %12.1f %12.1f %12.1f %9.3f GB/s %9.3f GB/s %9.3f GB/s %8.2f\n", size_text(bytes).c_str(),
                      iterations, raw * 1e6, allreduce * 1e6, pushpull * 1e6, busbw(raw), busbw(allreduce),
                      busbw(pushpull), allreduce > 0 ? busbw(pushpull) / busbw(allreduce) : 0.0);
          json += std::string(json.size() > 1 ? "," : "") + "\n {\"benchmark\": \"pushpull\", \"bytes\": " +
                  std::to_string(bytes) + ", \"workers\": " + std::to_string(workers) + ", \"shards\": " +
                  std::to_string(kv.num_servers()) + ", \"dedicated_servers\": " + std::to_string(servers) +
                  ", \"raw_mpi_seconds\": " + number(raw) + ", \"allreduce_seconds\": " + number(allreduce) +
                  ", \"pushpull_seconds\": " + number(pushpull) + ", \"raw_busbw_gbs\": " + number(busbw(raw)) +
                  ", \"allreduce_busbw_gbs\": " + number(busbw(allreduce)) +
                  ", \"pushpull_busbw_gbs\": " + number(busbw(pushpull)) + "}";
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
